import APNsEmulator
import AppAttest
import Crypto
import DiscordEmulator
import DiscordREST
import Foundation
import Logging
import SoftwareAttester
import TestSupport
import Testing
import ThreadDeskServer
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `threaddesk doctor` against the emulators: a correct set-up passes; each thing withheld in
/// Discord or wrong about the APNs key fails its own check, named, with what to do.
@Suite("Doctor")
struct DoctorTests {
    /// A set-up as the README asks for it, against the emulators: status tags and the desk's
    /// commands on (so Manage Threads and Manage Webhooks are needed), APNs, a SQLite store.
    func withDoctor(
        emulator emulatorConfiguration: DiscordEmulator.Configuration = .init(),
        faq: Bool = false,
        prepare: @Sendable (DiscordEmulator) throws -> Void = { _ in },
        configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
        options: Doctor.Options = Doctor.Options(),
        _ body: @Sendable (DoctorReport, ServerConfiguration, DiscordEmulator, APNsEmulator) async throws -> Void
    ) async throws {
        try await APNsEmulator.withRunning(logger: testLogger()) { apns in
            try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: testLogger()) { emulator in
                let discord = await emulator.endpoints()
                let credentials = await apns.credentials()
                var configuration = ServerConfiguration(
                    discordToken: discord.botToken, discordAPIURL: discord.restURL, guildID: discord.guildID,
                    forumChannelID: discord.forumChannelID, appKey: "a-test-app-key-of-24-chars")
                var settings = APNsSettings(
                    keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
                settings.url = credentials.url
                settings.caCertificatePEM = credentials.caCertificatePEM
                configuration.apns = settings
                configuration.storeURL = "sqlite://\(temporaryStorePath())"
                configuration.gatewaySecret = String(repeating: "g", count: 32)
                if faq { configuration.faqChannelID = discord.faqChannelID }
                try prepare(emulator)
                configure(&configuration)
                var options = options
                options.identifyTimeout = .seconds(30)
                let report = await Doctor(configuration: configuration, options: options, logger: testLogger()).run()
                try await body(report, configuration, emulator, apns)
            }
        }
    }

    static let allChecks = [
        "configuration", "discord.token", "discord.intent", "discord.gateway", "discord.guild", "discord.forum", "discord.permissions",
        "discord.tags", "apns.key", "apns.ids", "apns.token", "apns.topic", "attest", "assist", "crashes", "webhooks", "store", "listen.public", "metrics", "secrets",
    ]

    @Test func aCorrectSetUpPasses() async throws {
        try await withDoctor { report, _, _, _ in
            #expect(report.failed.isEmpty, "\(report.text)")
            #expect(report.passed)
            #expect(report.checks.map(\.name) == Self.allChecks)
            #expect(report.check("discord.permissions")?.detail.contains("Manage Webhooks") == true)
            #expect(report.check("store")?.detail.contains("does not exist yet") == true)
            #expect(report.text.hasSuffix("All \(Self.allChecks.count) checks passed."))
        }
    }

    static let needed: [(UInt64, String)] = [
        (1 << 10, "View Channel"), (1 << 11, "Send Messages"), (1 << 38, "Send Messages in Threads"), (1 << 15, "Attach Files"),
        (1 << 16, "Read Message History"), (1 << 6, "Add Reactions"), (1 << 34, "Manage Threads"), (1 << 29, "Manage Webhooks"),
    ]

    /// A member overwrite on the forum that denies the bot one permission: that one is named.
    /// (Without View Channel the bot can do nothing there, so every other one is missing too.)
    @Test(arguments: Self.needed)
    func eachPermissionDeniedInTheForumIsNamed(_ bit: UInt64, _ name: String) async throws {
        try await withDoctor(prepare: { $0.denyBotInForum(bit) }) { report, _, _, _ in
            let check = try #require(report.check("discord.permissions"))
            #expect(!check.passed && !report.passed)
            #expect(report.failed.map(\.name) == ["discord.permissions"])
            #expect(check.detail.contains(name))
            #expect(check.fix?.contains(name) == true)
            if name == "View Channel" {
                #expect(check.detail == "in the forum the bot lacks " + Self.needed.map(\.1).joined(separator: ", "))
            } else {
                #expect(check.detail == "in the forum the bot lacks \(name)")
            }
        }
    }

    /// Manage Threads and Manage Webhooks are needed only for status tags and the desk's commands.
    @Test func manageThreadsAndWebhooksAreNeededOnlyForTheDesk() async throws {
        try await withDoctor(
            prepare: { $0.denyBotInForum(1 << 34 | 1 << 29) },
            configure: {
                $0.statusTags = nil
                $0.desk.commands = false
            }
        ) { report, _, _, _ in
            #expect(report.passed, "\(report.text)")
            #expect(report.check("discord.permissions")?.detail.contains("Manage Threads") == false)
        }
    }

    /// The base comes from `@everyone` and the member's roles: `@everyone` without Add Reactions
    /// leaves the bot (whose own role does not give it) without it.
    @Test func theBaseComesFromTheGuildsRoles() async throws {
        let everyoneWithoutReactions: UInt64 = 2_248_473_465_835_073 & ~(1 << 6)
        try await withDoctor(prepare: { $0.setEveryonePermissions(everyoneWithoutReactions) }) { report, _, _, _ in
            let check = try #require(report.check("discord.permissions"))
            #expect(!check.passed)
            #expect(check.detail == "in the forum the bot lacks Add Reactions")
        }
    }

    /// The Message Content intent switched off: the application's flags say so and the identify is
    /// closed with 4014; both name the switch to turn on.
    @Test func theMissingIntentIsNamed() async throws {
        try await withDoctor(prepare: { $0.setMessageContentIntent(enabled: false) }) { report, _, _, _ in
            #expect(!report.passed)
            #expect(report.failed.map(\.name) == ["discord.intent", "discord.gateway"])
            let gateway = try #require(report.check("discord.gateway"))
            #expect(gateway.detail.contains("4014"))
            #expect(gateway.fix?.contains("turn on Message Content Intent in the Developer Portal") == true)
            #expect(report.check("discord.intent")?.fix?.contains("turn on Message Content Intent in the Developer Portal") == true)
        }
    }

    /// The same, set in the emulator's configuration (the intent off from the start).
    @Test func theIntentOffFromTheStartIsNamedToo() async throws {
        var emulator = DiscordEmulator.Configuration()
        emulator.messageContentIntentEnabled = false
        try await withDoctor(emulator: emulator) { report, _, _, _ in
            #expect(report.failed.map(\.name) == ["discord.intent", "discord.gateway"])
        }
    }

    @Test func aRefusedTokenStopsTheDiscordChecks() async throws {
        try await withDoctor(configure: { $0.discordToken = "not-the-token" }) { report, _, _, _ in
            let check = try #require(report.check("discord.token"))
            #expect(!check.passed && check.detail.contains("401"))
            #expect(report.check("discord.gateway") == nil)
            #expect(!report.text.contains("not-the-token"))
        }
    }

    @Test func aChannelThatIsNoForumIsNamed() async throws {
        try await withDoctor(configure: { $0.forumChannelID = $0.guildID }) { report, _, _, _ in
            #expect(report.check("discord.forum")?.passed == false)
            #expect(report.check("discord.permissions") == nil)
        }
    }

    /// A forum that requires a tag: the first tag serves; a DISCORD_DEFAULT_TAG_ID that is not a
    /// tag of the forum fails, naming the forum's tags.
    @Test func aForumThatRequiresATagNeedsAUsableDefault() async throws {
        try await withDoctor(prepare: { $0.setForumRequiresTag(true) }) { report, _, emulator, _ in
            let check = try #require(report.check("discord.tags"))
            #expect(check.passed && check.detail.contains(emulator.forumTagIDs[0]), "\(check.detail)")
        }
        try await withDoctor(prepare: { $0.setForumRequiresTag(true) }, configure: { $0.defaultTagID = "42" }) { report, _, emulator, _ in
            let check = try #require(report.check("discord.tags"))
            #expect(!check.passed && !report.passed)
            #expect(check.detail.contains("42"))
            #expect(emulator.forumTagIDs.allSatisfy { check.fix?.contains($0) == true })
        }
    }

    /// A key that is no P-256 PEM (here a P-384 key, and text), and ids of the wrong shape.
    @Test func aBadAPNsKeyIsNamed() async throws {
        for pem in [P384.Signing.PrivateKey().pemRepresentation, "not a key"] {
            try await withDoctor(configure: { $0.apns?.privateKeyPEM = pem }) { report, _, _, _ in
                let check = try #require(report.check("apns.key"))
                #expect(!check.passed && !report.passed)
                #expect(report.failed.map(\.name) == ["apns.key"])
                #expect(report.check("apns.topic")?.passed == true)
                #expect(!report.text.contains("PRIVATE KEY-----\n"))
            }
        }
        try await withDoctor(configure: { $0.apns?.keyID = "short" }) { report, _, _, _ in
            #expect(report.failed.map(\.name) == ["apns.ids"])
            #expect(report.check("apns.ids")?.detail.contains("APNS_KEY_ID") == true)
        }
        try await withDoctor(configure: { $0.apns?.topic = "no bundle id" }) { report, _, _, _ in
            #expect(report.failed.map(\.name) == ["apns.topic"])
        }
    }

    /// `--push-to`: one notification through the APNs client; Apple's answer reported either way.
    @Test func aTestPushReportsApplesAnswer() async throws {
        let device = String(repeating: "ab", count: 32)
        try await withDoctor(options: .init(pushTo: device)) { report, _, _, apns in
            #expect(report.check("apns.push")?.passed == true, "\(report.text)")
            #expect(apns.deliveries(to: device).count == 1)
        }
        try await withDoctor(options: .init(pushTo: "not-hex")) { report, _, _, apns in
            let check = try #require(report.check("apns.push"))
            #expect(!check.passed && check.detail.contains("BadDeviceToken"), "\(check.detail)")
            #expect(apns.deliveries.isEmpty)
        }
    }

    /// A store that exists is read without being changed: every migration applied.
    @Test func anExistingStoreIsReadNotChanged() async throws {
        let path = temporaryStorePath()
        _ = try makeStore(url: "sqlite://\(path)", logger: testLogger())
        try await withDoctor(configure: { $0.storeURL = "sqlite://\(path)" }) { report, _, _, _ in
            let check = try #require(report.check("store"))
            #expect(check.passed && check.detail.contains("migrations applied"), "\(check.detail)")
            let outbox = try #require(report.check("outbox"))
            #expect(outbox.passed && outbox.detail.contains("empty"), "\(outbox.detail)")
        }
    }

    /// The outbox: what waits and since when; a message waiting past a quarter of an hour means
    /// Discord takes nothing, and the doctor fails it. A failed message is counted, not stuck.
    @Test func theOutboxIsShownAndOneStuckForLongFails() async throws {
        let path = temporaryStorePath()
        let store = try makeStore(url: "sqlite://\(path)", logger: testLogger())
        let user = UserID("outbox-user")!
        let now = Date()
        func item(_ id: UInt64, minutesAgo: Double, failed: Bool = false) -> OutboxItem {
            OutboxItem(
                id: Snowflake(id), owner: user, content: "waiting", idempotencyKey: "k\(id)", acceptedAt: now.addingTimeInterval(-minutesAgo * 60),
                failure: failed ? DeliveryFailure(code: "50035", message: "Invalid Form Body") : nil)
        }
        try await store.withUser(user, idempotencyKey: nil) { context in
            context.record = UserRecord(id: user)
            context.enqueued = [item(1, minutesAgo: 60, failed: true), item(2, minutesAgo: 2)]
        }
        let waiting = Doctor.outboxCheck(try SQLiteStore.outboxUsage(path: path), now: now)
        #expect(waiting.passed && waiting.detail.contains("1 message(s) waiting") && waiting.detail.contains("the oldest for 120 s"), "\(waiting.detail)")
        #expect(waiting.detail.contains("1 refused by Discord"), "\(waiting.detail)")
        try await store.withUser(user, idempotencyKey: nil) { context in context.enqueued = [item(3, minutesAgo: 1)] }
        let later = Doctor.outboxCheck(try SQLiteStore.outboxUsage(path: path), now: now.addingTimeInterval(20 * 60))
        #expect(!later.passed && later.detail.contains("2 message(s) wait for Discord, the oldest for 22 min"), "\(later.detail)")
        #expect(later.fix?.contains("threaddesk_outbox_failures_total") == true)
    }

    /// PostgreSQL: a new database has its schema pending (the doctor does not migrate it); once a
    /// store migrated it, up to date; a server that does not answer fails within the deadline.
    @Test(.enabled(if: postgresIsAvailable))
    func aPostgreSQLStoreIsReachedAndItsSchemaRead() async throws {
        try await withFreshPostgresSchema { url in
            // Room for a PostgreSQL busy with the rest of the suite.
            var patient = Doctor.Options()
            patient.storeTimeout = .seconds(60)
            let doctor = Doctor(configuration: Self.storeOnly(url), options: patient, logger: testLogger())
            let fresh = await doctor.storeChecks()
            #expect(fresh.count == 2 && fresh[0].passed && fresh[0].detail.contains("pending"), "\(fresh)")
            #expect(await doctor.storeChecks()[0].detail.contains("pending"))
            try await PostgresStore.withRunning(url: url, logger: testLogger()) { _ in }
            let migrated = await doctor.storeChecks()
            #expect(migrated[0].passed && migrated[0].detail.contains("up to date"), "\(migrated)")
            #expect(migrated[1].name == "outbox" && migrated[1].passed && migrated[1].detail.contains("empty"), "\(migrated)")
        }
        var unreachable = Doctor.Options()
        unreachable.storeTimeout = .seconds(5)
        let refused = await Doctor(configuration: Self.storeOnly("postgres://u:secret@127.0.0.1:1/db"), options: unreachable, logger: testLogger())
            .storeChecks()
        #expect(!refused[0].passed)
        #expect(!refused[0].detail.contains("secret"))
    }

    static func storeOnly(_ url: String) -> ServerConfiguration {
        var configuration = ServerConfiguration(discordToken: "t", guildID: "1", forumChannelID: "2", appKey: "a-test-app-key-of-24-chars")
        configuration.storeURL = url
        return configuration
    }

    @Test func anUnreadableConfigurationIsTheOneFailedCheck() async {
        let report = await Doctor.report(environment: ["DISCORD_GUILD_ID": "x"], logger: testLogger())
        #expect(!report.passed)
        #expect(report.checks.map(\.name) == ["configuration"])
        #expect(report.checks[0].detail.contains("DISCORD_TOKEN"))
    }

    /// App Attest's set-up: the App IDs named, the push topic among them, Apple's root valid, and
    /// a development-only or test-root server said to be one.
    @Test func appAttestIsCheckedAgainstThePushTopicAndApplesRoot() async throws {
        let attester = try SoftwareAttester()
        try await withDoctor(configure: { configuration in
            configuration.attest.mode = .required
            configuration.attest.teamID = "ABCDE12345"
            configuration.attest.bundleIDs = [configuration.apns!.topic, "com.example.clip"]
        }) { report, configuration, _, _ in
            #expect(report.failed.isEmpty, "\(report.text)")
            #expect(report.checks.map(\.name).filter { $0.hasPrefix("attest") } == ["attest.app", "attest.root", "attest.environment"])
            #expect(report.check("attest.app")?.detail == "required, for ABCDE12345.\(configuration.apns!.topic), ABCDE12345.com.example.clip")
            #expect(report.check("attest.root")?.detail.contains("valid until 2045-03-15") == true)
            #expect(report.check("attest.environment")?.detail == "development and production")
        }
        try await withDoctor(configure: { configuration in
            configuration.attest.mode = .optional
            configuration.attest.teamID = "ABCDE12345"
            configuration.attest.bundleIDs = ["com.example.other"]
            configuration.attest.environments = [.development]
            configuration.attest.extraRootPEM = attester.rootCertificatePEM
        }) { report, configuration, _, _ in
            #expect(report.failed.map(\.name) == ["attest.app"])
            #expect(report.check("attest.app")?.detail.contains("APNS_TOPIC \(configuration.apns!.topic)") == true)
            let environment = try #require(report.check("attest.environment")?.detail)
            #expect(environment.contains("development only") && environment.contains("a test root is trusted too"))
        }
        // Apple's root is checked against the machine's time.
        let doctor = Doctor(configuration: { var c = Self.storeOnly("memory://"); c.attest.mode = .optional; return c }(), logger: testLogger())
        let expired = try #require(doctor.attestChecks(now: AppAttestVerifier.appleRootValidity.until).first { $0.name == "attest.root" })
        #expect(!expired.passed && expired.fix?.contains("update ThreadDesk") == true)
    }

    @Test func shortSecretsAreNamed() async throws {
        try await withDoctor(configure: { $0.appKey = "short" }) { report, _, _, _ in
            #expect(report.failed.map(\.name) == ["secrets"])
            #expect(report.check("secrets")?.detail.contains("APP_KEY") == true)
        }
    }

    /// `/metrics` names every app and its traffic: the doctor says where it is served and warns when
    /// anyone reaching a port reads it.
    @Test func theDoctorSaysWhereMetricsAreAndWarnsWhenAnyoneCouldReadThem() async throws {
        try await withDoctor { report, _, _, _ in
            #expect(report.check("metrics")?.detail.hasPrefix("not served") == true)
        }
        try await withDoctor(configure: { $0.metricsToken = String(repeating: "m", count: 32) }) { report, _, _, _ in
            #expect(report.check("metrics")?.detail == "on the public listener, behind METRICS_TOKEN")
        }
        try await withDoctor(configure: { ($0.internalHost, $0.internalPort) = ("0.0.0.0", 19_091) }) { report, _, _, _ in
            let check = try #require(report.check("metrics"))
            #expect(check.passed && check.warning == true && check.fix?.contains("METRICS_TOKEN") == true)
            #expect(report.text.contains("! metrics: /metrics is open"))
        }
        try await withDoctor(configure: { ($0.internalHost, $0.internalPort) = ("127.0.0.1", 19_091) }) { report, _, _, _ in
            #expect(report.check("metrics")?.warning == nil && report.check("metrics")?.detail == "on the internal listener (127.0.0.1:19091)")
        }
    }

    /// `--json`: `{"passed": Bool, "checks": [{"name", "passed", "detail", "fix"?}]}`, with no secret in it.
    @Test func theJSONShape() async throws {
        try await withDoctor(prepare: { $0.denyBotInForum(1 << 6) }) { report, configuration, _, _ in
            let object = try #require(try JSONSerialization.jsonObject(with: report.json) as? [String: Any])
            #expect(Set(object.keys) == ["passed", "checks"])
            #expect(object["passed"] as? Bool == false)
            let checks = try #require(object["checks"] as? [[String: Any]])
            #expect(checks.count == Self.allChecks.count)
            for check in checks {
                #expect(check["name"] is String && check["passed"] is Bool && check["detail"] is String)
                #expect((check["passed"] as? Bool == false) == (check["fix"] is String))
            }
            let failed = try #require(checks.first { $0["passed"] as? Bool == false })
            #expect(failed["name"] as? String == "discord.permissions")
            let text = String(decoding: report.json, as: UTF8.self) + report.text
            for secret in [configuration.discordToken, configuration.appKey, configuration.gatewaySecret ?? "", "PRIVATE KEY"] {
                #expect(!text.contains(secret))
            }
        }
    }
}
