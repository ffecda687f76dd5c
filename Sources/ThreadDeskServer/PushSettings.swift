import APNs
import Foundation

/// How replies become notifications. Without APNs credentials nothing is pushed, but replies
/// are still tracked, so turning pushes on later does not replay old ones.
public struct PushSettings: Sendable {
    public var title = "New reply"
    public var category: String? = "SUPPORT_REPLY"
    public var sound: String? = "default"
    /// Also send a background (`content-available`) push so the app can refresh.
    public var background = false
    /// The safety-net catch-up through REST, besides the one after every gateway gap.
    public var catchUpInterval: Duration = .seconds(300)
    /// How long a caller that asked for a catch-up while another ran waits for the next one.
    public var catchUpWait: Duration = .seconds(60)

    public init() {}
}

/// APNs credentials from the environment.
public struct APNsSettings: Sendable {
    public var keyID: String
    public var teamID: String
    public var privateKeyPEM: String
    public var topic: String
    /// Used for tokens registered without an environment (legacy routes).
    public var defaultEnvironment: APNsEnvironment = .production
    /// Emulator only: overrides Apple's hosts and adds a trust root.
    public var url: String?
    public var caCertificatePEM: String?
    /// How long one push may take, retries included, before it is left to the next catch-up.
    public var budget: Duration = .seconds(10)

    public init(keyID: String, teamID: String, privateKeyPEM: String, topic: String) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKeyPEM = privateKeyPEM
        self.topic = topic
    }
}

extension APNsSettings: CustomReflectable, CustomStringConvertible {
    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "teamID": teamID, "privateKeyPEM": "<redacted>", "topic": topic, "url": url as Any])
    }

    public var description: String { "APNsSettings(key \(keyID), team \(teamID), topic \(topic))" }
}
