import AssistEmulator
import APNs
import APNsEmulator
import ArgumentParser
import Crypto
import DiscordREST
import DiscordEmulator
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import SoftwareAttester
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskTracing
import UnixSignals

/// Everything on loopback against the built-in Discord emulator: no accounts, no keys.
struct Sandbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run ThreadDesk on loopback against the built-in Discord emulator.")

    @Option(help: "Port of the ThreadDesk API.") var port = 8080
    @Option(help: "Folder for the sandbox's SQLite database.") var dataDirectory = "data/sandbox"
    @Option(help: "Seconds an event stream lasts before the page resumes it (LIVE_MAX_STREAM_SECONDS).") var maxStreamSeconds = 3600

    func run() async throws {
        var logger = Logger(label: "threaddesk.sandbox")
        logger.logLevel = .notice
        let emulator = DiscordEmulator(configuration: .init(), logger: logger)
        var apnsConfiguration = APNsEmulator.Configuration()
        // The second app's pushes go to its own topic (one key signs for both).
        apnsConfiguration.otherTopics = [SandboxServer.secondTopic]
        let apnsEmulator = try APNsEmulator(configuration: apnsConfiguration, logger: logger)
        // A model for drafted answers and translation: deterministic, answering from the FAQ.
        let assistEmulator = AssistEmulator(configuration: .init(), logger: logger)
        let server = SandboxServer(
            discord: emulator, apns: apnsEmulator, assist: assistEmulator, port: port, dataDirectory: dataDirectory, maxStreamSeconds: maxStreamSeconds,
            logger: logger)
        // One group, one lifecycle: on SIGTERM/SIGINT the server drains first (it was started
        // last), then the emulators it talks to stop.
        // The server's default shutdown grace (10 s), and a few seconds for the emulators after it.
        let group = buildServiceGroup([emulator, apnsEmulator, assistEmulator, server], grace: .seconds(15), cancelGrace: .seconds(5), logger: logger)
        try await group.run()
    }

    static func randomHex(_ bytes: Int) -> String {
        SymmetricKey(size: .init(bitCount: bytes * 8)).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    static func welcome(configuration: ServerConfiguration, discord: DiscordEmulator.Endpoints, apns: String, assist: AssistEmulator.Endpoints) -> String {
        let api = "http://127.0.0.1:\(configuration.port)"
        return """
            ThreadDesk sandbox is running.

              Agent console  \(api)/sandbox/console   (the forum as Discord shows it; reply, add notes, see pushes)
              App widget     \(api)/sandbox/widget    (plays the app user: send messages, see replies, upload diagnostics, send a crash report)
                             \(api)/sandbox/widget?app=\(SandboxServer.secondApp)   (the same as a user of the second app, in its own forum)

              Terminal chat  swift run --package-path Clients/ThreadDeskKit threaddesk-chat --server \(api)
              App Attest     optional: add --attest to the chat to open the session as an attested device
                             (the sandbox's software attester, \(api)/sandbox/attester; never Apple's root)
              API            \(api)      (OpenAPI document: \(api)/openapi.yaml)
              App keys       \(configuration.catalog.apps.map { "\($0.id): \($0.appKey)" }.joined(separator: "\n                             "))
              Legacy key     \(configuration.catalog.apps[0].legacyAPIKey ?? "-")
              Discord (fake) \(discord.restURL)
              Agent control  \(discord.controlURL)
              APNs (fake)    \(apns)   (deliveries: curl -sk --http2 \(apns)/_emulator/deliveries)
              Crash reports  the widget's "Send a crash report" sends the sample app MyShop's crash (its dSYM is uploaded);
                             in the console: /crashes, /crash id:C1 fixed:4.3 (a 4.2 report is then answered)\(configuration.crashes.symbolizerPath == nil ? "; no llvm-symbolizer here: frames stay offsets" : "")
              Model (fake)   \(assist.baseURL)   (drafted answers, answers after /away on, /translate; what it was asked: curl -s \(assist.controlURL)/requests)

            Try it:
              TOKEN=$(curl -s -XPOST \(api)/v1/session -H 'X-App-Key: \(configuration.appKey)' \\
                -H 'Content-Type: application/json' -d '{}' | sed 's/.*"token":"\\([^"]*\\)".*/\\1/')
              curl -s -XPOST \(api)/v1/messages -H "Authorization: Bearer $TOKEN" -H 'Idempotency-Key: hello-1' \\
                -H 'Content-Type: application/json' -d '{"content":"Hello from the app"}'
              curl -s -XPUT \(api)/v1/push-token -H "Authorization: Bearer $TOKEN" \\
                -H 'Content-Type: application/json' -d '{"token":"'$(printf 'ab%.0s' {1..32})'","environment":"development"}'
              curl -s \(discord.controlURL)/threads
              curl -s -XPOST \(discord.controlURL)/threads/THREAD_ID/replies -d '{"content":"Hi! Support here."}'
              curl -s \(api)/v1/messages -H "Authorization: Bearer $TOKEN"

            Going live: cp .env.example .env, fill it in, then `threaddesk doctor` checks it against
            Discord (token, intents, the bot's permissions in the forum), Apple and the store, naming
            what to fix, before `threaddesk serve`.

            Ctrl-C stops it.
            """
    }
}

/// The sandbox's ThreadDesk: built once the emulators have their ports, then run as a service of
/// the sandbox's one group.
struct SandboxServer: Service {
    let discord: DiscordEmulator
    let apns: APNsEmulator
    let assist: AssistEmulator
    let port: Int
    let dataDirectory: String
    let maxStreamSeconds: Int
    let logger: Logger

    /// Two apps on one deployment, as a developer with two apps runs it: the second in a forum of
    /// its own, made as an admin makes one (`POST /guilds/{id}/channels`), with its own APNs topic.
    static let secondApp = "tides"
    /// The help center's screenshot (160×90: a settings screen with its blue button), a real PNG a browser draws.
    static let helpScreenshot = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAKAAAABaCAIAAACwpMoFAAAA2UlEQVR42u3aMQ3AIBRFUeRUBDOaUMdcJTggYUREB37hJFcBZ3k/bRpj6uCSJwAswAIswAIswAIMWJcA51wUPMCAAQMWYAEWYAEWYMCAAQMGLMACrH3A8j1YgAVYgAVYgAELsADrf8CtvccHGDBgwIABG1kCLMACDFiA5UxyJgEGDBgwYMBGlpElwAIswAIsZ5IzCTBgwIABG1kCLMBRe2oPEmDAgAELMGDAgAEDBgwYMGDAgAUYMGDAgAEDBgwYMGDA5AALMGDA8tOdAAuwAAMWYAEWYAHWhxa1drd3MHJN1gAAAABJRU5ErkJggg==") ?? Data()
    static let secondTopic = "com.example.tides"

    func run() async throws {
        let endpoints = await discord.endpoints()
        var configuration = ServerConfiguration(
            discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
            forumChannelID: endpoints.forumChannelID, appKey: "sandbox-" + Sandbox.randomHex(12))
        configuration.port = port
        let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: logger)
        let secondForum = try await admin.createForum(guildID: endpoints.guildID, name: "tides-support", tags: ["ios"])
        var first = AppSettings(
            id: .default, name: "Sandbox app", appKey: configuration.appKey, guildID: endpoints.guildID, forumChannelID: endpoints.forumChannelID)
        first.legacyAPIKey = "sandbox-legacy-" + Sandbox.randomHex(8)
        // The first app's forum of curated answers (see below).
        first.faqChannelID = endpoints.faqChannelID
        var second = AppSettings(
            id: AppID(Self.secondApp)!, name: "Tides", appKey: "sandbox-\(Self.secondApp)-" + Sandbox.randomHex(12), guildID: endpoints.guildID,
            forumChannelID: secondForum.id)
        second.apnsTopic = Self.secondTopic
        second.attestBundleIDs = ["com.example.tides"]
        configuration.storeURL = "sqlite://\(dataDirectory)/threaddesk.sqlite"
        // One browser plays every user here: quotas per address would only get in the way.
        configuration.quotas = .off
        // A FAQ forum of curated answers: the widget suggests them while the user types, and its
        // Help tab lists them by tag (one with a screenshot) as the app's help center.
        configuration.faqChannelID = endpoints.faqChannelID
        _ = try? discord.postFAQ(
            title: "I can't connect my TV",
            answer: "Open Settings › Devices and tap **Add by hand**, then enter the TV's address (Settings › Network on the TV).\nkeywords: chromecast, smart tv, pairing",
            tags: ["television"])
        _ = try? discord.postFAQ(
            title: "How do I cancel my subscription?", answer: "Subscriptions are managed by the App Store: Settings › your name › Subscriptions.",
            tags: ["billing"])
        _ = try? discord.postFAQ(
            title: "Where is the Add by hand button?",
            answer: "Bottom right of Settings › Devices, in blue (see the screenshot).\nkeywords: add device, manual",
            tags: ["television"],
            attachments: [.init(filename: "add-by-hand.png", contentType: "image/png", data: Self.helpScreenshot)])
        _ = try? discord.postFAQ(
            title: "Restore my purchases on a new phone",
            answer: "Sign in with the same Apple Account, then Settings › Plan › **Restore purchases**.", tags: ["billing"])
        _ = try? discord.postFAQ(
            title: "Export my lists", answer: "Settings › Data › Export writes a CSV file you can share or keep.")
        configuration.live.maxStreamDuration = .seconds(max(1, maxStreamSeconds))
        // TRACING=otlp (and TRACING_ENDPOINT…) works here too: point it at a local Jaeger to watch
        // a send and a reply cross the server. A malformed value leaves tracing off, said once.
        var tracingProblems: [String] = []
        configuration.tracing = TracingSettings(environment: ProcessInfo.processInfo.environment, problems: &tracingProblems)
        if !tracingProblems.isEmpty { logger.warning("Tracing is off: invalid \(tracingProblems.joined(separator: ", "))") }
        let credentials = await apns.credentials()
        var apnsSettings = APNsSettings(
            keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
        apnsSettings.url = credentials.url
        apnsSettings.caCertificatePEM = credentials.caCertificatePEM
        apnsSettings.defaultEnvironment = .development
        configuration.apns = apnsSettings
        // Drafted answers: a user's message gets a draft note with Send / Edit / Discard in the
        // console a moment later; /translate and /reply-translated work too.
        let assistEndpoints = await assist.endpoints()
        configuration.assist.url = assistEndpoints.baseURL
        configuration.assist.model = assistEndpoints.model
        configuration.assist.draftDelay = .seconds(2)
        // Answers while away: after `/away on` in the console, a question the FAQ answers well gets
        // the assistant's answer in the widget (and a note in the console) instead of a draft.
        configuration.assist.auto = .away
        // App Attest optional: a newcomer sees both paths (an attested device, and a caller without
        // one); the software attester's root is trusted here only.
        let attester = SandboxAttester(attester: try SoftwareAttester(teamID: "SANDBOX123", bundleID: "com.example.sandbox"))
        configuration.attest.mode = .optional
        configuration.attest.teamID = attester.attester.teamID
        configuration.attest.bundleIDs = [attester.attester.bundleID]
        first.attestBundleIDs = [attester.attester.bundleID]
        configuration.apps = [first, second]
        configuration.attest.extraRootPEM = attester.attester.rootCertificatePEM
        // A test root only beside its own (development) keys, as APP_ATTEST_EXTRA_ROOT requires.
        configuration.attest.environments = [attester.attester.environment]
        // Crash reports: the sample app's dSYM goes up through POST /internal/dsyms once the server
        // listens (as CI uploads a build's); the widget sends MyShop's crash, the console has /crashes.
        let crashes = SandboxCrashes(app: first.id, logger: logger)
        configuration.crashes.dsymsSecret = crashes.secret
        // Signed webhooks: both apps' events come back to the console's webhook log.
        let webhooks = SandboxWebhooks()
        if self.port != 0 {
            configuration.apps = configuration.apps?.map { app in
                var app = app
                app.webhooks = [webhooks.target(port: self.port)]
                return app
            }
        }
        let store = try makeStore(url: configuration.storeURL, logger: logger)
        let pages = SandboxRoutes(discord: discord, apns: apns, catalog: configuration.catalog, webhooks: webhooks)
        let (listening, port) = AsyncStream.makeStream(of: Int.self)
        let app = buildApplication(
            configuration: configuration, store: store, inProcessGateway: true, logger: logger,
            extraRoutes: { router in
                pages.register(on: router)
                attester.register(on: router)
            },
            onServerRunning: { port.yield($0) })
        FileHandle.standardOutput.write(
            Data((Sandbox.welcome(configuration: configuration, discord: endpoints, apns: credentials.url, assist: assistEndpoints) + "\n").utf8))
        // The upload waits for the listener (it cannot run inside onServerRunning: the server
        // accepts connections only once that returns); the server's end cancels it.
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                defer { port.finish() }
                try await app.run()
                return true
            }
            group.addTask {
                for await listeningPort in listening {
                    await crashes.uploadSample(to: listeningPort)
                    break
                }
                return false
            }
            while let serverEnded = try await group.next() {
                if serverEnded { group.cancelAll() }
            }
        }
    }
}
