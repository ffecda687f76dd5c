import Foundation

/// Printing a configuration (a service list in a log line, a crash dump) never shows a secret.
extension ServerConfiguration: CustomReflectable, CustomStringConvertible {
    public var customMirror: Mirror {
        Mirror(self, children: [
            "discordToken": "<redacted>", "discordAPIURL": discordAPIURL, "guildID": guildID, "forumChannelID": forumChannelID,
            "defaultTagID": defaultTagID as Any, "appKey": "<redacted>", "identitySecret": identitySecret.map { _ in "<redacted>" } as Any,
            "legacyAPIKey": legacyAPIKey.map { _ in "<redacted>" } as Any, "gatewaySecret": gatewaySecret.map { _ in "<redacted>" } as Any,
            "metricsToken": metricsToken.map { _ in "<redacted>" } as Any,
            "storeURL": Self.redactingPassword(storeURL), "host": host, "port": port, "internalPort": internalPort as Any,
            "discordGlobalLimit": discordGlobalLimit, "apns": apns as Any, "assist": assist, "webhookTargets": webhookTargets,
        ])
    }

    public var description: String {
        "ServerConfiguration(\(host):\(port), forum \(forumChannelID), store \(Self.redactingPassword(storeURL)))"
    }

    /// `postgres://user:secret@host/db` as `postgres://user:<redacted>@host/db`.
    static func redactingPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "redacted"
        return components.string?.replacingOccurrences(of: ":redacted@", with: ":<redacted>@") ?? "<unprintable store URL>"
    }
}
