import Foundation
import Logging
import DiscordGateway
import Testing
import ThreadDeskServer

@Suite("Configuration")
struct ConfigurationTests {
    static let complete = [
        "DISCORD_TOKEN": "token", "DISCORD_GUILD_ID": "123", "DISCORD_FORUM_CHANNEL_ID": "456", "APP_KEY": "app",
    ]

    @Test func oneMessageNamesEverythingMissingOrWrong() {
        #expect(throws: ServerConfiguration.Problem(
            missing: ["DISCORD_TOKEN", "DISCORD_FORUM_CHANNEL_ID", "APP_KEY"], invalid: ["DISCORD_GUILD_ID (a Discord id, digits only)", "PORT"])
        ) {
            try ServerConfiguration(environment: ["DISCORD_GUILD_ID": "guild", "PORT": "99999", "APP_KEY": "  "])
        }
        let problem = ServerConfiguration.Problem(missing: ["APP_KEY"], invalid: [])
        #expect(problem.description.contains("APP_KEY"))
    }

    @Test func defaultsAndOverrides() throws {
        let defaults = try ServerConfiguration(environment: Self.complete)
        #expect(defaults.discordAPIURL == "https://discord.com/api/v10")
        #expect(defaults.storeURL == "sqlite://./data/threaddesk.sqlite")
        #expect(defaults.port == 8080 && defaults.host == "127.0.0.1")
        #expect(defaults.legacyAPIKey == nil && defaults.identitySecret == nil)
        var environment = Self.complete
        environment.merge(["PORT": "9000", "HOST": "0.0.0.0", "LOG_LEVEL": "DEBUG", "LEGACY_API_KEY": "legacy", "STORE_URL": "memory://"]) { $1 }
        let custom = try ServerConfiguration(environment: environment)
        #expect(custom.port == 9000 && custom.host == "0.0.0.0" && custom.logLevel == .debug)
        #expect(custom.legacyAPIKey == "legacy" && custom.storeURL == "memory://")
    }

    /// The user-data settings: lock by default, retention off; anything else named with what it may be.
    @Test func userDeletionAndRetentionAreValidated() throws {
        let defaults = try ServerConfiguration(environment: Self.complete)
        #expect(defaults.privacy.deletion == .lock && defaults.privacy.retention == nil)
        let set = try ServerConfiguration(environment: Self.complete.merging(["USER_DELETION": "Delete", "RETENTION_DAYS": "365"]) { $1 })
        #expect(set.privacy.deletion == .delete && set.privacy.retention == .seconds(365 * 86_400))
        #expect(try ServerConfiguration(environment: Self.complete.merging(["RETENTION_DAYS": "off"]) { $1 }).privacy.retention == nil)
        for (deletion, days) in [("archive", "0"), ("", "-3"), ("lock", "36501"), ("delete", "1.5"), ("lock", "a year")] {
            var environment = Self.complete
            environment["USER_DELETION"] = deletion
            environment["RETENTION_DAYS"] = days
            do {
                _ = try ServerConfiguration(environment: environment)
                Issue.record("USER_DELETION=\(deletion) RETENTION_DAYS=\(days) was taken")
            } catch {
                #expect(error.invalid.contains { $0.hasPrefix("RETENTION_DAYS (whole days") })
                #expect(error.invalid.contains { $0.hasPrefix("USER_DELETION (") } == !["", "lock", "delete"].contains(deletion))
            }
        }
    }

    @Test func dotEnvIsReadAndTheEnvironmentWins() throws {
        let parsed = DotEnv.parse("""
            # comment
            APP_KEY=from-file
            export DISCORD_TOKEN="quoted value"
            APNS_PRIVATE_KEY="-----BEGIN-----\\nline\\n-----END-----"
            EMPTY=
            not a line
            """)
        #expect(parsed["APP_KEY"] == "from-file")
        #expect(parsed["DISCORD_TOKEN"] == "quoted value")
        #expect(parsed["APNS_PRIVATE_KEY"] == "-----BEGIN-----\nline\n-----END-----")
        #expect(parsed["EMPTY"] == "")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("threaddesk-\(UUID().uuidString).env").path
        try "APP_KEY=from-file\nHOST=file-host\n".write(toFile: path, atomically: true, encoding: .utf8)
        let merged = DotEnv.environment(path: path, process: ["APP_KEY": "from-process"])
        #expect(merged["APP_KEY"] == "from-process")
        #expect(merged["HOST"] == "file-host")
    }

    @Test func theDatabasePasswordIsNeverPrinted() throws {
        var configuration = ServerConfiguration(discordToken: "t", guildID: "1", forumChannelID: "2", appKey: "k")
        configuration.storeURL = "postgres://threaddesk:s3cret-pw@db.internal:5432/threaddesk"
        for printed in [String(describing: configuration), String(reflecting: configuration), "\(configuration)"] {
            #expect(!printed.contains("s3cret-pw"))
        }
        #expect(String(describing: configuration).contains("postgres://threaddesk:<redacted>@db.internal:5432/threaddesk"))
    }

    @Test func theDSYMsSecretIsNeverPrinted() throws {
        let secret = "dsyms-upload-secret-0123456789"
        let configuration = try ServerConfiguration(environment: [
            "DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k", "DSYMS_SECRET": secret,
        ])
        #expect(configuration.crashes.dsymsSecret == secret)
        var dumped = "", dumpedSettings = ""
        dump(configuration, to: &dumped)
        dump(configuration.crashes, to: &dumpedSettings)
        let printed = [
            String(describing: configuration), String(reflecting: configuration), "\(configuration)", dumped,
            String(describing: configuration.crashes), String(reflecting: configuration.crashes), "\(configuration.crashes)", dumpedSettings,
        ]
        for text in printed { #expect(!text.contains(secret), "\(text)") }
        #expect(dumpedSettings.contains("<set>") && "\(CrashSettings())".contains("<unset>"))
    }

    @Test func timeoutsAreReadAndChecked() throws {
        var environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k"]
        environment.merge(["REQUEST_TIMEOUT_SECONDS": "2.5", "SHUTDOWN_GRACE_SECONDS": "3", "DEBUG_WAIT_SECONDS": "1", "IDLE_TIMEOUT_SECONDS": "15"]) { $1 }
        let configuration = try ServerConfiguration(environment: environment)
        #expect(configuration.requestTimeout == .milliseconds(2500))
        #expect(configuration.shutdownGrace == .seconds(3))
        #expect(configuration.debugWaitThreshold == .seconds(1))
        #expect(configuration.idleTimeout == .seconds(15))
        environment["REQUEST_TIMEOUT_SECONDS"] = "0"
        environment["IDLE_TIMEOUT_SECONDS"] = "soon"
        #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: environment) }
        do {
            _ = try ServerConfiguration(environment: environment)
        } catch {
            #expect(error.invalid.count == 2)
        }
    }

    @Test func liveSettingsAreReadAndChecked() throws {
        var environment = Self.complete
        environment["LIVE_KEEPALIVE_SECONDS"] = "15"
        environment["LIVE_MAX_STREAM_SECONDS"] = "600"
        environment["TYPING_INTERVAL_SECONDS"] = "5"
        environment["READ_RECEIPT_EMOJI"] = "✅"
        let configuration = try ServerConfiguration(environment: environment)
        #expect(configuration.live.keepAlive == .seconds(15))
        #expect(configuration.live.maxStreamDuration == .seconds(600))
        #expect(configuration.live.typingInterval == .seconds(5))
        #expect(configuration.live.readReceiptEmoji == "✅")
        environment["READ_RECEIPT_EMOJI"] = "none"
        #expect(try ServerConfiguration(environment: environment).live.readReceiptEmoji == nil)
        for (name, bad) in [("READ_RECEIPT_EMOJI", "seen"), ("LIVE_MAX_STREAMS", "0"), ("TYPING_INTERVAL_SECONDS", "0.1")] {
            var wrong = environment
            wrong[name] = bad
            #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: wrong) }
        }
    }

    @Test func trustedProxiesAndTheIPv6PrefixAreReadAndChecked() throws {
        var environment = Self.complete
        environment["TRUSTED_PROXIES"] = "10.0.0.0/8, fd00::/8,127.0.0.1"
        environment["QUOTA_IPV6_PREFIX"] = "56"
        let read = try ServerConfiguration(environment: environment)
        #expect(read.trustedProxies == ["10.0.0.0/8", "fd00::/8", "127.0.0.1"])
        #expect(read.quotaIPv6PrefixBits == 56)
        #expect(try ServerConfiguration(environment: Self.complete).quotaIPv6PrefixBits == 64)
        for (name, wrong) in [("TRUSTED_PROXIES", "10.0.0.0/33"), ("TRUSTED_PROXIES", "proxy.internal"), ("QUOTA_IPV6_PREFIX", "129")] {
            var bad = Self.complete
            bad[name] = wrong
            #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: bad) }
        }
    }

    @Test func aShortGatewaySecretIsRefused() throws {
        var environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k"]
        environment["GATEWAY_SECRET"] = "short"
        #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: environment) }
        environment["GATEWAY_SECRET"] = String(repeating: "s", count: 32)
        #expect(try ServerConfiguration(environment: environment).gatewaySecret?.count == 32)
    }

    /// A short identity secret could be guessed from one id and its userHash, and then sign any id.
    @Test func aShortIdentitySecretIsRefused() throws {
        var environment = Self.complete
        environment["IDENTITY_SECRET"] = String(repeating: "s", count: 31)
        do {
            _ = try ServerConfiguration(environment: environment)
            Issue.record("a 31-character IDENTITY_SECRET was accepted")
        } catch {
            #expect(error.missing.isEmpty)
            #expect(error.invalid.count == 1 && error.invalid.first?.hasPrefix("IDENTITY_SECRET (at least 32 characters") == true, "\(error.invalid)")
        }
        environment["IDENTITY_SECRET"] = String(repeating: "s", count: 32)
        #expect(try ServerConfiguration(environment: environment).identitySecret?.count == 32)
        environment["IDENTITY_SECRET"] = "  "
        #expect(try ServerConfiguration(environment: environment).identitySecret == nil)
    }

    @Test func theInternalListenerAndTheDiscordShareAreReadAndChecked() throws {
        let defaults = try ServerConfiguration(environment: Self.complete)
        #expect(defaults.internalPort == nil && defaults.discordGlobalLimit == 50 && defaults.gatewayCompression == .zlibStream)
        #expect(defaults.discordSharedTurnLateness == .milliseconds(500))
        var environment = Self.complete
        environment.merge([
            "INTERNAL_PORT": "9090", "INTERNAL_HOST": "10.0.0.2", "DISCORD_GLOBAL_LIMIT": "25", "GATEWAY_COMPRESSION": "zstd-stream",
            "DISCORD_SHARED_TURN_LATENESS_MS": "1200",
        ]) { $1 }
        let configuration = try ServerConfiguration(environment: environment)
        #expect(configuration.internalPort == 9090 && configuration.internalHost == "10.0.0.2")
        #expect(configuration.discordGlobalLimit == 25 && configuration.gatewayCompression == .zstdStream)
        #expect(configuration.discordSharedTurnLateness == .milliseconds(1200))
        for (name, bad) in [
            ("INTERNAL_PORT", "70000"), ("DISCORD_GLOBAL_LIMIT", "0"), ("DISCORD_GLOBAL_LIMIT", "51"), ("DISCORD_GLOBAL_LIMIT", "lots"),
            ("GATEWAY_COMPRESSION", "gzip"), ("DISCORD_SHARED_TURN_LATENESS_MS", "-1"), ("DISCORD_SHARED_TURN_LATENESS_MS", "9000"),
        ] {
            var wrong = environment
            wrong[name] = bad
            #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: wrong) }
        }
    }
}
