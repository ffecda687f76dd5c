import DiscordGateway
import Foundation
import Logging
import Testing

@Suite("threaddesk gateway's settings")
struct GatewayDaemonConfigurationTests {
    @Test func namesEveryMissingAndMalformedVariableAtOnce() {
        #expect(throws: GatewayDaemonConfiguration.Problem(
            missing: ["DISCORD_TOKEN", "DISCORD_FORUM_CHANNEL_ID", "SERVER_URL", "GATEWAY_SECRET"], invalid: [])) {
            try GatewayDaemonConfiguration(environment: [:])
        }
        do {
            _ = try GatewayDaemonConfiguration(environment: [
                "DISCORD_TOKEN": "t", "DISCORD_FORUM_CHANNEL_ID": "12ab", "SERVER_URL": "localhost:8080", "GATEWAY_SECRET": "short",
                "LOG_LEVEL": "loud", "GATEWAY_COMPRESSION": "brotli",
            ])
            Issue.record("accepted malformed settings")
        } catch {
            #expect(error.missing.isEmpty)
            #expect(error.invalid.count == 5)
            #expect(error.description.contains("GATEWAY_COMPRESSION (zlib-stream, zstd-stream or none)"))
            #expect(error.description.contains("GATEWAY_SECRET (at least 32 characters)"))
            #expect(!error.description.contains("short"), "a secret's value reached the message")
        }
    }

    @Test func readsAGoodEnvironmentAndNeverPrintsItsSecrets() throws {
        let settings = try GatewayDaemonConfiguration(environment: [
            "DISCORD_TOKEN": "bot-token-value", "DISCORD_FORUM_CHANNEL_ID": "123", "SERVER_URL": "http://127.0.0.1:8080",
            "GATEWAY_SECRET": String(repeating: "s", count: 32), "LOG_LEVEL": "debug",
        ])
        #expect(settings.discordAPIURL == "https://discord.com/api/v10" && settings.logLevel == .debug)
        #expect(settings.compression == .zlibStream)
        var zstd = ["GATEWAY_COMPRESSION": "zstd-stream"]
        zstd.merge(["DISCORD_TOKEN": "t", "DISCORD_FORUM_CHANNEL_ID": "1", "SERVER_URL": "http://h", "GATEWAY_SECRET": String(repeating: "s", count: 32)]) { $1 }
        #expect(try GatewayDaemonConfiguration(environment: zstd).compression == .zstdStream)
        let printed = String(describing: settings) + String(reflecting: settings)
        #expect(!printed.contains("bot-token-value") && !printed.contains(String(repeating: "s", count: 32)))
    }

    /// One daemon serves every app: with the server's apps file, every app's forum.
    @Test func readsEveryAppsForumFromTheAppsFile() throws {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apps-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let base = ["DISCORD_TOKEN": "t", "SERVER_URL": "http://h", "GATEWAY_SECRET": String(repeating: "s", count: 32), "APPS_FILE": file.path]
        try #"{"apps": [{"id": "a", "forumChannelID": "11"}, {"id": "b", "forumChannelID": "22"}]}"#.write(to: file, atomically: true, encoding: .utf8)
        #expect(try GatewayDaemonConfiguration(environment: base).forumChannelIDs == ["11", "22"])
        try #"{"apps": [{"id": "a", "forumChannelID": "11"}, {"id": "b"}]}"#.write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: GatewayDaemonConfiguration.Problem(missing: [], invalid: ["APPS_FILE (every app's forumChannelID, a Discord id)"])) {
            try GatewayDaemonConfiguration(environment: base)
        }
    }
}
