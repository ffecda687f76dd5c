import APNsEmulator
import AppAttest
import ThreadDeskWire
import SoftwareAttester
import Crypto
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Synchronization
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// Several apps on one deployment: `APPS_FILE` read and checked, and two apps — each its own key,
/// forum and APNs topic — that share a user id and never reach each other.
@Suite("Several apps, one deployment", .timeLimit(.minutes(2)))
struct AppsTests {
    static func parse(_ json: String, guild: String? = "100") throws(ConfigurationProblem) -> [AppSettings] {
        try AppsFile.parse(Data(json.utf8), guildID: guild, relativeTo: URL(fileURLWithPath: NSTemporaryDirectory()))
    }

    @Test func aGoodFileNamesEachAppsKeyForumAndSettings() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "beta-key-0123456789abcdef\n".write(to: folder.appendingPathComponent("beta.key"), atomically: true, encoding: .utf8)
        let file = folder.appendingPathComponent("apps.json")
        try #"""
            {"apps": [
              {"id": "alpha", "name": "Alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201",
               "supportHours": "UTC Mon-Fri 09:00-17:00", "awayMessage": "Back soon", "apns": {"topic": "com.example.alpha"}},
              {"id": "beta", "appKeyFile": "beta.key", "forumChannelID": "202", "guildID": "300", "identitySecret": "\#(String(repeating: "s", count: 32))"}
            ]}
            """#.write(to: file, atomically: true, encoding: .utf8)
        let apps = try AppsFile.read(path: file.path, guildID: "100")
        #expect(apps.map(\.id.rawValue) == ["alpha", "beta"])
        #expect(apps[0].guildID == "100" && apps[1].guildID == "300", "the deployment's guild unless the app names its own")
        #expect(apps[1].appKey == "beta-key-0123456789abcdef" && apps[1].name == "beta")
        #expect(apps[0].apnsTopic == "com.example.alpha" && apps[1].apnsTopic == nil)
        #expect(apps[0].supportHours != nil && apps[0].awayMessage == "Back soon")
        let catalog = AppCatalog(apps)
        #expect(catalog.app(forKey: "beta-key-0123456789abcdef")?.id == apps[1].id)
        #expect(catalog.app(forKey: "alpha-key-0123456789abcde") == nil)
        #expect(catalog.app(forForum: "202")?.id.rawValue == "beta" && catalog.forums == ["201", "202"])
        #expect(!String(describing: apps[0]).contains("alpha-key") && !String(reflecting: apps[1]).contains("beta-key"))
    }

    @Test func aBadFileIsRefusedWithEveryProblemNamed() {
        let bad = #"""
            {"apps": [
              {"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201", "faqChannel": "5"},
              {"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201"},
              {"id": "Not A Slug", "appKey": "short", "forumChannelID": "x"},
              {"id": "gamma", "appKey": "gamma-key-0123456789abcdef", "apns": {"topic": "t", "keyID": "k"}},
              {"id": "delta", "appKey": "delta-key-0123456789abcdef", "appKeyFile": "d.key", "forumChannelID": "204"},
              {"id": "eps", "appKey": "eps-key-0123456789abcdef", "forumChannelID": "205", "identitySecret": "\#(String(repeating: "s", count: 32))"},
              {"id": "zeta", "appKey": "zeta-key-0123456789abcdef", "forumChannelID": "206", "identitySecret": "\#(String(repeating: "s", count: 32))"}
            ], "extra": true}
            """#
        #expect {
            try Self.parse(bad)
        } throws: { error in
            guard let problem = error as? ConfigurationProblem else { return false }
            let said = problem.invalid.joined(separator: "\n")
            let expected = [
                #"unknown field "extra""#, #"apps[0] ("alpha"): unknown field "faqChannel""#,
                #"apps "alpha" and "alpha" have the same id"#, #"have the same appKey"#, #"have the same forumChannelID (201)"#,
                #"apps[2] ("Not A Slug"): id (a slug"#, #"apps[2] ("Not A Slug"): appKey (16–256"#,
                #"apps[2] ("Not A Slug"): forumChannelID (a Discord id"#, #"apps[3] ("gamma"): forumChannelID missing"#,
                #"apps[3] ("gamma"): unknown field "apns.keyID""#, #"apps[4] ("delta"): appKey and appKeyFile both set"#,
                #"apps "eps" and "zeta" have the same identitySecret"#,
            ]
            return expected.allSatisfy(said.contains)
        }
        #expect(throws: ConfigurationProblem.self) { try Self.parse(#"{"apps": []}"#) }
        #expect(throws: ConfigurationProblem.self) { try Self.parse("not json") }
        #expect(throws: ConfigurationProblem.self, "no guild anywhere") {
            try Self.parse(#"{"apps": [{"id": "a", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "1"}]}"#, guild: nil)
        }
    }

    @Test func anAppsVariableBesideTheFileIsRefused() throws {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apps-\(UUID().uuidString).json")
        try #"{"apps": [{"id": "a", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "1"}]}"#.write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let base = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "9", "APPS_FILE": file.path]
        let configuration = try ServerConfiguration(environment: base)
        #expect(configuration.catalog.apps.map(\.id.rawValue) == ["a"])
        #expect {
            try ServerConfiguration(environment: base.merging(["APP_KEY": "k", "SUPPORT_HOURS": "UTC Mon 09:00-10:00"]) { $1 })
        } throws: { error in
            let said = (error as? ConfigurationProblem)?.invalid ?? []
            return said.contains("APP_KEY (set per app in APPS_FILE)") && said.contains("SUPPORT_HOURS (set per app in APPS_FILE)")
        }
    }

    /// `APNS_TOPIC` is the fallback of apps without a topic: demanded only when one has none.
    @Test func apnsTopicIsNeededOnlyByAnAppWithoutItsOwn() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func file(_ name: String, _ apps: [String]) throws -> String {
            let url = folder.appendingPathComponent(name)
            try "{\"apps\": [\(apps.joined(separator: ","))]}".write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let alpha = #"{"id": "a", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "1", "apns": {"topic": "com.example.a"}}"#
        let bravo = #"{"id": "b", "appKey": "bravo-key-0123456789abcdef", "forumChannelID": "2", "apns": {"topic": "com.example.b"}}"#
        let plain = #"{"id": "b", "appKey": "bravo-key-0123456789abcdef", "forumChannelID": "2"}"#
        let both = try file("both.json", [alpha, bravo])
        let one = try file("one.json", [alpha, plain])
        let key = P256.Signing.PrivateKey().pemRepresentation
        let apns = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "9", "APNS_KEY_ID": "ABCDE12345", "APNS_TEAM_ID": "TEAM123456", "APNS_PRIVATE_KEY": key]
        let configuration = try ServerConfiguration(environment: apns.merging(["APPS_FILE": both]) { $1 })
        #expect(configuration.apns?.topic == "com.example.a")
        #expect(configuration.catalog.apps.map(\.apnsTopic) == ["com.example.a", "com.example.b"])
        #expect {
            try ServerConfiguration(environment: apns.merging(["APPS_FILE": one]) { $1 })
        } throws: { error in
            (error as? ConfigurationProblem)?.missing == ["APNS_TOPIC"]
        }
        let fallback = try ServerConfiguration(environment: apns.merging(["APPS_FILE": one, "APNS_TOPIC": "com.example.shared"]) { $1 })
        #expect(fallback.apns?.topic == "com.example.shared")
        #expect(fallback.catalog.apps.map(\.apnsTopic) == ["com.example.a", nil])
        #expect(throws: ConfigurationProblem.self, "one app without an apps file needs the variable") {
            try ServerConfiguration(environment: apns.merging(["APP_KEY": "k", "DISCORD_FORUM_CHANNEL_ID": "1"]) { $1 })
        }
    }

    @Test func aUserIDOfOneAppIsNeverAnotherAppsKey() throws {
        let beta = try #require(AppID("beta"))
        let local = try #require(UserID("beta/alice") == nil ? UserID("alice") : nil, "an app's input cannot name another app")
        let scoped = UserID(app: beta, local: local)
        #expect(scoped.app == beta && scoped.local == local && scoped != local)
        #expect(UserID(storageKey: scoped.rawValue) == scoped)
        #expect(UserID(app: .default, local: local) == local, "the default app's keys are the ids from before")
        #expect(UserID(storageKey: "default/alice") == nil && UserID(storageKey: "Beta/alice") == nil)
        let token = UserToken.generate(for: scoped)
        #expect(UserToken.user(in: token) == scoped)
        let secret = IdentityVerifier(secret: String(repeating: "x", count: 32))
        #expect(secret.userHash(for: scoped) == secret.userHash(for: local), "the app's backend signs the id it knows")
    }

    /// Two apps, each with its own forum (the second made through Discord's channel route, as an
    /// admin would) and APNs topic, and one user id in both.
    static let betaTopic = "com.example.beta"
    static func twoApps() -> EmulatorPreparation {
        EmulatorPreparation { emulator, configuration in
            let endpoints = await emulator.endpoints()
            let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
            let forum = try await admin.createForum(guildID: endpoints.guildID, name: "beta-support", tags: ["open"])
            var alpha = AppSettings(
                id: AppID("alpha")!, name: "Alpha", appKey: "alpha-key-0123456789abcdef", guildID: endpoints.guildID,
                forumChannelID: endpoints.forumChannelID)
            alpha.awayMessage = "Alpha is away"
            var beta = AppSettings(
                id: AppID("beta")!, name: "Beta", appKey: "beta-key-0123456789abcdef", guildID: endpoints.guildID, forumChannelID: forum.id)
            beta.apnsTopic = betaTopic
            configuration.apps = [alpha, beta]
        }
    }

    static func open(_ server: Harness, key: String, user: String?, token: String? = nil) async throws -> Harness.Reply {
        try await server.request(
            .post, "/v1/session", token: token, headers: [.init("X-App-Key")!: key], json: user.map { #"{"userId":"\#($0)"}"# } ?? "{}")
    }

    @Test func twoAppsShareAUserIDAndNeverReachEachOther() async throws {
        try await withServer(gateway: true, prepare: Self.twoApps(), apnsTopics: [Self.betaTopic]) { server in
            let apps = server.configuration.catalog.apps
            let (alpha, beta) = (apps[0], apps[1])
            #expect(try await Self.open(server, key: "not-a-key-of-any-app", user: nil).status == .unauthorized)

            // The same id in both apps: two users, each answered with the id as the app knows it.
            let a = try await Self.open(server, key: alpha.appKey, user: "same-user").decode(Harness.Session.self)
            let b = try await Self.open(server, key: beta.appKey, user: "same-user").decode(Harness.Session.self)
            #expect(a.userId == "same-user" && b.userId == "same-user" && a.token != b.token)
            for (token, device) in [(a.token, String(repeating: "aa", count: 32)), (b.token, String(repeating: "bb", count: 32))] {
                let set = try await server.request(.put, "/v1/push-token", token: token, json: #"{"token":"\#(device)","environment":"development"}"#)
                #expect(set.status == .noContent)
            }
            #expect(try await server.send("hello from alpha", token: a.token).status == .created)
            #expect(try await server.send("hello from beta", token: b.token).status == .created)

            // Each in its own app's forum.
            let local = try #require(UserID("same-user"))
            let alphaThread = try #require(try await server.store.user(UserID(app: alpha.id, local: local))?.threadID)
            let betaThread = try #require(try await server.store.user(UserID(app: beta.id, local: local))?.threadID)
            let threads = server.emulator.threads()
            #expect(threads.first { $0.id == alphaThread }?.parentID == alpha.forumChannelID)
            #expect(threads.first { $0.id == betaThread }?.parentID == beta.forumChannelID)

            // A reply in beta's forum reaches beta's user only, pushed with beta's topic.
            _ = try server.emulator.replyAsAgent(inThread: betaThread, content: "answer for beta")
            try await server.settled()
            let contents = { (token: String) async throws -> [String] in
                let reply = try await server.request(.get, "/v1/messages", token: token)
                return (reply.json["messages"]?.arrayValue ?? []).compactMap { $0["content"]?.stringValue }
            }
            #expect(try await contents(a.token) == ["hello from alpha"])
            #expect(try await contents(b.token) == ["hello from beta", "answer for beta"])
            let pushes = server.apns.deliveries
            #expect(pushes.count == 1 && pushes.first?.topic == Self.betaTopic && pushes.first?.deviceToken == String(repeating: "bb", count: 32))
            #expect(pushes.first?.aps["thread-id"] as? String == "same-user", "the device sees the id its app knows")
            _ = try server.emulator.replyAsAgent(inThread: alphaThread, content: "answer for alpha")
            try await server.settled()
            #expect(server.apns.deliveries.last?.topic == server.configuration.apns?.topic, "alpha has no topic of its own: the deployment's")
            // Several apps: the series worth telling apart carry the app.
            #expect(try await server.metric(#"threaddesk_pushes_total{app="beta",outcome="sent"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_pushes_total{app="alpha",outcome="sent"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_messages_accepted_total{app="alpha"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_messages_posted_total{app="beta"}"#) == 1)

            // Neither app's key opens the other's user, not even beside that user's own token.
            #expect(try await Self.open(server, key: alpha.appKey, user: "same-user", token: b.token).status == .conflict)
            #expect(try await Self.open(server, key: beta.appKey, user: "same-user", token: a.token).status == .conflict)
            // Each app's own token renews its own session.
            #expect(try await Self.open(server, key: beta.appKey, user: "same-user", token: b.token).status == .created)

            // The export names the id as the app knows it, and holds only the app's conversation.
            let export = try await server.request(.get, "/v1/me/export", token: a.token)
            #expect(export.json["user"]?["userId"]?.stringValue == "same-user")
            #expect(!String(decoding: export.body, as: UTF8.self).contains("beta"))

            // Erasing beta's user leaves alpha's.
            #expect(try await server.request(.delete, "/v1/me", token: b.token).status == .noContent)
            try await server.settled()
            #expect(try await server.request(.get, "/v1/messages", token: b.token).status == .unauthorized)
            #expect(try await contents(a.token) == ["hello from alpha", "answer for alpha"])
        }
    }

    @Test func awayIsPerApp() async throws {
        try await withServer(gateway: true, prepare: Self.twoApps(), apnsTopics: [Self.betaTopic]) { server in
            let apps = server.configuration.catalog.apps
            let a = try await Self.open(server, key: apps[0].appKey, user: nil).decode(Harness.Session.self)
            let b = try await Self.open(server, key: apps[1].appKey, user: nil).decode(Harness.Session.self)
            try await server.store.setGlobalValue("desk/away/alpha", to: "on")
            let status = { (token: String) async throws -> String? in
                try await server.request(.get, "/v1/support-status", token: token).json["status"]?.stringValue
            }
            #expect(try await status(a.token) == "away")
            #expect(try await status(b.token) == "open")
            #expect(try await server.send("anyone there?", token: a.token).status == .created)
            let thread = try #require(try await server.store.user(UserID(app: apps[0].id, local: UserID(a.userId)!))?.threadID)
            let posted = try await server.discordClient.messages(in: thread, after: "0", limit: 10).map(\.content)
            #expect(posted.contains { $0.hasSuffix("Alpha is away") }, "alpha's away message, in alpha's thread")
        }
    }

    /// An app taken out of the file keeps its data, opens nothing, and goes with `admin app delete`.
    @Test func anAppRemovedFromTheFileKeepsItsDataUntilDeleted() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        let local = try #require(UserID("kept-user"))
        let tokens = Mutex<(alpha: String, beta: String)>(("", ""))
        do {
            try await withServer(store: storeURL, prepare: Self.twoApps(), apnsTopics: [Self.betaTopic], { $0.discordBudget = .seconds(1) }) { server in
                let apps = server.configuration.catalog.apps
                let a = try await Self.open(server, key: apps[0].appKey, user: local.rawValue).decode(Harness.Session.self)
                let b = try await Self.open(server, key: apps[1].appKey, user: local.rawValue).decode(Harness.Session.self)
                #expect(try await server.send("alpha's", token: a.token).status == .created)
                #expect(try await server.send("beta's", token: b.token).status == .created)
                // One more of beta's waits in the outbox when the deployment stops.
                server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1000, status: 503)
                #expect(try await server.accept("beta's last", token: b.token).status == .created)
                try await server.settled()
                tokens.withLock { $0 = (a.token, b.token) }
                // Still configured: not erased.
                await #expect(throws: UserAdministration.AppStillConfigured.self) {
                    try await UserAdministration(store: server.store, configuration: server.configuration, logger: testLogger()).deleteApp(apps[1].id)
                }
            }
        }
        let (alphaToken, betaToken) = tokens.withLock { $0 }
        // The deployment again, beta gone from its file, a minute later (beta's waiting message is due).
        let clock = ManualClock()
        try await withServer(store: storeURL, time: .driven(by: clock, from: Date().addingTimeInterval(60)), prepare: Self.twoApps()) { configuration in
            configuration.apps = configuration.apps.map { Array($0.prefix(1)) }
        } _: { server in
            let beta = try #require(AppID("beta"))
            #expect(server.configuration.catalog[beta] == nil)
            #expect(try await server.request(.get, "/v1/messages", token: betaToken).status == .unauthorized, "a removed app's token opens nothing")
            #expect(try await server.request(.get, "/v1/messages", token: alphaToken).status == .ok)
            #expect(try await server.store.user(UserID(app: beta, local: local)) != nil, "its data is kept")
            // Its waiting message is posted nowhere: it waits (for a replica that serves its app, or
            // the app's deletion), looked at again only every ten minutes.
            try await server.settled(driving: clock)
            let waiting = try await server.store.outbox(of: UserID(app: beta, local: local))
            #expect(waiting.count == 1 && waiting.first?.failure == nil, "\(waiting)")
            let now = Date().addingTimeInterval(60)  // the server's clock is a minute ahead
            #expect((waiting.first?.nextAttempt ?? .distantPast) > now.addingTimeInterval(300))
            #expect(server.discordPosts == 0)

            let admin = UserAdministration(store: server.store, configuration: server.configuration, logger: testLogger())
            #expect(try await admin.deleteApp(beta) == 1)
            #expect(try await server.store.user(UserID(app: beta, local: local)) == nil)
            #expect(try await server.store.users(of: beta, after: nil, limit: 10).isEmpty)
            #expect(try await server.store.user(UserID(app: AppID("alpha")!, local: local)) != nil, "the other app's user of the same id stays")
        }
    }

    /// The doctor checks every app's guild, forum, permissions and tags, and names the app in each finding.
    @Test func theDoctorChecksEveryApp() async throws {
        try await APNsEmulator.withRunning(logger: testLogger()) { apns in
            try await DiscordEmulator.withRunning(configuration: .init(), logger: testLogger()) { emulator in
                let endpoints = await emulator.endpoints()
                let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
                let second = try await admin.createForum(guildID: endpoints.guildID, name: "beta-support")
                var configuration = ServerConfiguration(
                    discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                    forumChannelID: endpoints.forumChannelID, appKey: "unused")
                let key = { (name: String) in "\(name)-key-0123456789abcdef" }
                configuration.apps = [
                    AppSettings(id: AppID("alpha")!, name: "Alpha", appKey: key("alpha"), guildID: endpoints.guildID, forumChannelID: endpoints.forumChannelID),
                    AppSettings(id: AppID("beta")!, name: "Beta", appKey: key("beta"), guildID: endpoints.guildID, forumChannelID: second.id),
                    AppSettings(id: AppID("gamma")!, name: "Gamma", appKey: key("gamma"), guildID: endpoints.guildID, forumChannelID: "1"),
                ]
                configuration.storeURL = "sqlite://\(temporaryStorePath())"
                configuration.gatewaySecret = String(repeating: "g", count: 32)
                let credentials = await apns.credentials()
                var settings = APNsSettings(
                    keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
                (settings.url, settings.caCertificatePEM) = (credentials.url, credentials.caCertificatePEM)
                configuration.apns = settings
                var options = Doctor.Options()
                options.identifyTimeout = .seconds(30)
                let report = await Doctor(configuration: configuration, options: options, logger: testLogger()).run()
                let forums = report.checks.filter { $0.name == "discord.forum" }
                #expect(forums.count == 3)
                #expect(forums.filter(\.passed).map { String($0.detail.prefix(11)) } == ["app alpha: ", "app beta: #"])
                let gamma = try #require(forums.first { !$0.passed })
                #expect(gamma.detail.hasPrefix("app gamma: the channel 1 cannot be read") && gamma.fix?.contains("forumChannelID in APPS_FILE") == true)
                #expect(report.checks.filter { $0.name == "discord.tags" }.count == 2, "tags are checked in each forum that could be read")
            }
        }
    }

    /// Each forum gets the status tags; the desk acts within the app of the thread it is used in.
    @Test func tagsAndTheDeskArePerApp() async throws {
        try await withServer(gateway: true, prepare: Self.twoApps(), apnsTopics: [Self.betaTopic], DeskTests.deskOn) { server in
            let apps = server.configuration.catalog.apps
            let a = try await Self.open(server, key: apps[0].appKey, user: "desk-user").decode(Harness.Session.self)
            let b = try await Self.open(server, key: apps[1].appKey, user: "desk-user").decode(Harness.Session.self)
            #expect(try await server.send("alpha needs help", token: a.token).status == .created)
            #expect(try await server.send("beta needs help", token: b.token).status == .created)
            try await server.settled()
            let local = try #require(UserID("desk-user"))
            let alphaThread = try #require(try await server.store.user(UserID(app: apps[0].id, local: local))?.threadID)
            let betaThread = try #require(try await server.store.user(UserID(app: apps[1].id, local: local))?.threadID)

            // Each forum got the three tags, and each thread shows its own forum's "needs reply".
            for (app, thread) in [(apps[0], alphaThread), (apps[1], betaThread)] {
                let forum = try await server.discordClient.channel(app.forumChannelID)
                let needsReply = try #require(forum.availableTags?.first { $0.name == "needs reply" }, "\(app.id)'s forum has the tags")
                #expect(DeskTests.thread(server, thread)?.appliedTags.contains(needsReply.id) == true)
            }

            // A snippet added in beta's thread is beta's; alpha's agents do not see it.
            let added = try await DeskTests.run(
                server, "snippets", in: betaThread, [.subcommand("add", [.string("name", "hello"), .string("text", "Hello from Beta support")])])
            #expect(added.content?.contains("Added") == true)
            let listed = try await DeskTests.run(server, "snippets", in: alphaThread, [.subcommand("list", [])])
            #expect(listed.content?.contains("No snippets yet") == true)
            let missing = try await DeskTests.run(server, "snippet", in: alphaThread, [.string("name", "hello")])
            #expect(missing.content?.contains("no snippet named") == true)

            // /user names the id as the app knows it, and the app.
            let card = try #require(try await DeskTests.run(server, "user", in: betaThread).content)
            #expect(card.contains("`desk-user` of **Beta** (`beta`)") && !card.contains("beta/desk-user"))

            // /away in alpha's thread makes alpha away, not beta.
            let away = try await DeskTests.run(server, "away", in: alphaThread, [.subcommand("on", [])])
            #expect(away.content?.contains("Support is away") == true)
            let status = { (token: String) async throws -> String? in
                try await server.request(.get, "/v1/support-status", token: token).json["status"]?.stringValue
            }
            #expect(try await status(a.token) == "away")
            #expect(try await status(b.token) == "open")
        }
    }

    /// Each app's FAQ forum feeds its own users' suggestions only, and over one gateway connection.
    @Test func eachAppsFAQForumFeedsOnlyItsOwnUsers() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            try await Self.twoApps().apply(emulator, &configuration)
            let endpoints = await emulator.endpoints()
            let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
            let betaFAQ = try await admin.createForum(guildID: endpoints.guildID, name: "beta-faq", tags: ["billing"])
            configuration.apps?[0].faqChannelID = emulator.faqChannelID
            configuration.apps?[1].faqChannelID = betaFAQ.id
            _ = try emulator.postFAQ(title: "Cancel my alpha subscription", answer: "Alpha: the App Store manages it.", tags: ["billing"])
            _ = try emulator.postFAQ(title: "Cancel my beta subscription", answer: "Beta: Settings › Plan.", tags: ["billing"], in: betaFAQ.id)
        }
        try await withServer(gateway: true, prepare: prepare, apnsTopics: [Self.betaTopic]) { server in
            let apps = server.configuration.catalog.apps
            let a = try await Self.open(server, key: apps[0].appKey, user: nil).decode(Harness.Session.self)
            let b = try await Self.open(server, key: apps[1].appKey, user: nil).decode(Harness.Session.self)
            try await SuggestionTests.settled(server, posts: 2)
            #expect(try await SuggestionTests.titles(server, "cancel subscription", token: a.token) == ["Cancel my alpha subscription"])
            #expect(try await SuggestionTests.titles(server, "cancel subscription", token: b.token) == ["Cancel my beta subscription"])
            // A post written while the server runs reaches its own app's book only (the gateway's event).
            let forum = try #require(apps[1].faqChannelID)
            _ = try server.emulator.postFAQ(title: "Export my beta data", answer: "Beta: Settings › Export.", in: forum)
            try await server.settled()
            #expect(try await SuggestionTests.titles(server, "export data", token: b.token) == ["Export my beta data"])
            #expect(try await SuggestionTests.titles(server, "export data", token: a.token).isEmpty)
        }
    }

    /// App Attest checks the app's own bundle ids: a key one app's copy attested opens nothing of another's.
    @Test func attestationIsPerApp() async throws {
        let attester = try SoftwareAttester()
        let prepare = EmulatorPreparation { emulator, configuration in
            try await Self.twoApps().apply(emulator, &configuration)
            configuration.apps?[0].attestBundleIDs = [attester.bundleID]
            configuration.apps?[1].attestBundleIDs = ["com.example.beta"]
            configuration.attest.mode = .optional
            configuration.attest.teamID = attester.teamID
            configuration.attest.extraRootPEM = attester.rootCertificatePEM
        }
        try await withServer(prepare: prepare, apnsTopics: [Self.betaTopic]) { server in
            let apps = server.configuration.catalog.apps
            let key = attester.generateKey()
            let keyHeader = { (app: AppSettings) -> HTTPFields in [.init("X-App-Key")!: app.appKey] }
            let challenge = { (app: AppSettings) async throws -> String in
                let reply = try await server.request(.post, "/v1/attest/challenge", headers: keyHeader(app))
                return try #require(reply.json["challenge"]?.stringValue)
            }
            let attestation = { (app: AppSettings) async throws -> Harness.Reply in
                let nonce = try await challenge(app)
                let object = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: Data(nonce.utf8))))
                let body = SessionRequest(attestation: AttestationPayload(
                    keyId: key.idBase64, attestationObject: Data(object).base64EncodedString(), challenge: nonce))
                return try await server.request(
                    .post, "/v1/session", headers: keyHeader(app), json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
            }
            let refused = try await attestation(apps[1])
            #expect(refused.status == .unauthorized && refused.errorCode == "attestation_app_id_mismatch", "alpha's bundle is not beta's")
            #expect(try await attestation(apps[0]).status == .created)

            // An assertion by alpha's key opens no session with beta's key.
            let asserted = { (app: AppSettings) async throws -> Harness.Reply in
                let nonce = try await challenge(app)
                let body = Data("{}".utf8)
                let clientData = AppAttestAssertion.clientData(method: "POST", path: "/v1/session", challenge: nonce, body: Array(body))
                let signature = try attester.assert(key, clientDataHash: Array(SHA256.hash(data: clientData)))
                let header = AppAttestAssertion.header(keyId: key.idBase64, challenge: nonce, assertion: Data(signature).base64EncodedString())
                var headers = keyHeader(app)
                headers[.init(AppAttestAssertion.headerName)!] = header
                return try await server.request(.post, "/v1/session", headers: headers, raw: body)
            }
            let other = try await asserted(apps[1])
            #expect(other.status == .unauthorized && other.errorCode == "assertion_app_id_mismatch")
            #expect(try await asserted(apps[0]).status == .created)
        }
    }

    /// A single-app deployment moved to an apps file naming its app `default`: every user, token,
    /// thread and conversation goes on as before, and the new app's users are apart.
    @Test func oneAppBecomesTheDefaultOfSeveral() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        let before = Mutex<(token: String, userId: String, thread: String)?>(nil)
        // The forum of the single app, kept across both runs (the emulator's is made anew each time).
        try await withServer(store: storeURL) { server in
            let user = try await server.session(#"{"userId":"old-user"}"#)
            #expect(try await server.send("from before", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            before.withLock { $0 = (user.token, user.userId, thread) }
        }
        let old = try #require(before.withLock { $0 })
        // No gateway, and nothing that reads Discord: this run's emulator is new and never held
        // the old thread (a read would find it deleted). The start's reconciliation reads no
        // recently active thread either (its window is empty): on a busy machine it used to read
        // the old one before the checks below, and find it gone.
        try await withServer(store: storeURL, prepare: Self.twoApps()) { configuration in
            configuration.apps?[0].id = .default
            configuration.mirror.reconcileWindow = .zero
        } _: { server in
            let apps = server.configuration.catalog.apps
            #expect(apps[0].id == .default)
            // The old token opens the old user: the same record, keyed as before, and its conversation.
            #expect(try await server.request(.get, "/v1/support-status", token: old.token).status == .ok)
            let id = try #require(UserID(old.userId))
            #expect(try await server.store.user(id)?.threadID == old.thread)
            #expect(try await server.store.conversation(of: id, after: nil, limit: 10).messages.map(\.content) == ["from before"])
            // The old id with the default app's key is the old user (claimed: its token proves it);
            // with the new app's key it is a new user of that app.
            #expect(try await Self.open(server, key: apps[0].appKey, user: old.userId).status == .conflict)
            #expect(try await Self.open(server, key: apps[0].appKey, user: old.userId, token: old.token).status == .created)
            #expect(try await Self.open(server, key: apps[1].appKey, user: old.userId).status == .created)
        }
    }

    /// Apps in different guilds of the same bot: the second app's forum in a second guild.
    @Test func anAppInAnotherGuild() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            let endpoints = await emulator.endpoints()
            let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
            let forum = try await admin.createForum(guildID: endpoints.secondGuildID, name: "beta-support")
            let alpha = AppSettings(
                id: AppID("alpha")!, name: "Alpha", appKey: "alpha-key-0123456789abcdef", guildID: endpoints.guildID,
                forumChannelID: endpoints.forumChannelID)
            var beta = AppSettings(
                id: AppID("beta")!, name: "Beta", appKey: "beta-key-0123456789abcdef", guildID: endpoints.secondGuildID, forumChannelID: forum.id)
            beta.apnsTopic = Self.betaTopic
            configuration.apps = [alpha, beta]
        }
        var emulator = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
        emulator.secondGuild = true
        try await withServer(emulator: emulator, gateway: true, prepare: prepare, apnsTopics: [Self.betaTopic], DeskTests.deskOn) { server in
            let apps = server.configuration.catalog.apps
            let b = try await Self.open(server, key: apps[1].appKey, user: "far-user").decode(Harness.Session.self)
            let device = String(repeating: "cd", count: 32)
            #expect(try await server.request(.put, "/v1/push-token", token: b.token, json: #"{"token":"\#(device)","environment":"development"}"#).status == .noContent)
            #expect(try await server.send("hello from the other guild", token: b.token).status == .created)
            let thread = try #require(try await server.store.user(UserID(app: apps[1].id, local: UserID("far-user")!))?.threadID)
            let channel = try await server.discordClient.channel(thread)
            #expect(channel.guildId == server.discord.secondGuildID && channel.parentId == apps[1].forumChannelID)
            // The reply comes over the one gateway connection, is pushed with beta's topic.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "answer from the other guild")
            try await server.settled()
            #expect(server.apns.deliveries(to: device).map(\.topic) == [Self.betaTopic])
            // The desk's commands are registered in both guilds and answer in the second.
            let card = try #require(try await DeskTests.run(server, "user", in: thread).content)
            #expect(card.contains("`far-user` of **Beta**"))
            #expect(card.contains("https://discord.com/channels/\(server.discord.secondGuildID)/") || card.contains("nothing yet"))
        }
    }

    /// An app's sessions-per-app budget is its own: one app's key spending it leaves another's.
    @Test func appWideLimitsArePerApp() async throws {
        try await withServer(prepare: Self.twoApps(), apnsTopics: [Self.betaTopic], { $0.quotas.sessionsPerApp = QuotaLimit(2, per: .seconds(3600)) }) { server in
            let apps = server.configuration.catalog.apps
            for _ in 0..<2 {
                let opened = try await Self.open(server, key: apps[0].appKey, user: nil)
                #expect(opened.status == .created)
            }
            #expect(try await Self.open(server, key: apps[0].appKey, user: nil).status == .tooManyRequests)
            #expect(try await Self.open(server, key: apps[1].appKey, user: nil).status == .created, "beta's budget is its own")
        }
    }
}
