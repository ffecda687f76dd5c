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
    /// A push that failed for a passing reason is tried again after this, doubling up to `retryCap`.
    public var retryBase: Duration = .seconds(2)
    public var retryCap: Duration = .seconds(300)
    /// A reply older than this is not pushed any more (by its Discord timestamp): given up after
    /// that long of APNs failing, and never pushed when it is first learned that late.
    public var maxAge: Duration = .seconds(6 * 3600)
    /// Users whose pushes are sent at the same time; one user's pushes go one after the other.
    public var concurrency = 16

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
