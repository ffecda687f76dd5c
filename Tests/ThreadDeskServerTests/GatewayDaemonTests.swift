import APNsEmulator
import AsyncHTTPClient
import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("The gateway daemon and the server apart", .timeLimit(.minutes(2)))
struct GatewayDaemonTests {
    /// Runs the server until `body` returns; `body` gets the port it listens on (`configuration.port`,
    /// or the one the system gave for 0).
    static func withServerProcess(
        _ configuration: ServerConfiguration, store: any UserStore, _ body: (_ port: Int) async throws -> Void
    ) async throws {
        let (ports, portSignal) = AsyncStream.makeStream(of: Int.self)
        let app = buildApplication(
            configuration: configuration, store: store, logger: testLogger(), onServerRunning: { portSignal.yield($0) })
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: testLogger())
        let running = Task { try await group.run() }
        do {
            var listening: Int?
            for await port in ports {
                listening = port
                break
            }
            try await body(try #require(listening))
        } catch {
            await group.triggerGracefulShutdown()
            _ = await running.result
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    static func post(_ url: String, _ body: String, headers: [(String, String)]) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test func theDaemonHoldsEventsWhileTheServerIsDownAndDeliversAfterwards() async throws {
        try await APNsEmulator.withRunning(logger: testLogger()) { apns in
            try await DiscordEmulator.withRunning(configuration: .fastWindows(scale: 0.02), logger: testLogger()) { discord in
                let endpoints = await discord.endpoints()
                let credentials = await apns.credentials()
                var configuration = ServerConfiguration(
                    discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                    forumChannelID: endpoints.forumChannelID, appKey: "app")
                configuration.port = 0
                configuration.gatewaySecret = "daemon-secret-at-least-thirty-two-characters"
                var settings = APNsSettings(keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
                settings.url = credentials.url
                settings.caCertificatePEM = credentials.caCertificatePEM
                configuration.apns = settings
                let store = try SQLiteStore(path: temporaryStorePath())
                let device = String(repeating: "cd", count: 32)

                // The user and their thread exist; then the server goes away.
                var thread = ""
                var base = ""
                try await Self.withServerProcess(configuration, store: store) { port in
                    // It comes back on the same port later, where the daemon looks for it.
                    configuration.port = port
                    base = "http://127.0.0.1:\(port)"
                    let (_, session) = try await Self.post("\(base)/v1/session", "{}", headers: [("X-App-Key", "app")])
                    let token = try #require(try JSON.parse(Data(session.utf8))["token"]?.stringValue)
                    var push = HTTPClientRequest(url: "\(base)/v1/push-token")
                    push.method = .PUT
                    push.headers.add(name: "Authorization", value: "Bearer \(token)")
                    push.headers.add(name: "Content-Type", value: "application/json")
                    push.body = .bytes(ByteBuffer(string: #"{"token":"\#(device)","environment":"development"}"#))
                    _ = try await HTTPClient.shared.execute(push, timeout: .seconds(5))
                    _ = try await Self.post("\(base)/v1/messages", #"{"content":"hi"}"#, headers: [("Authorization", "Bearer \(token)"), ("Idempotency-Key", "1")])
                    // The server process's outbox makes the thread after it answered.
                    try await discord.waitUntil("the thread made") { !$0.threads().isEmpty }
                    thread = try #require(discord.threads().first?.id)
                }

                // The daemon runs on its own, with the server down; its backoff runs on a clock the
                // test drives.
                // The daemon's own wiring, from the environment `threaddesk gateway` reads.
                let daemonSettings = try GatewayDaemonConfiguration(environment: [
                    "DISCORD_TOKEN": endpoints.botToken, "DISCORD_FORUM_CHANNEL_ID": endpoints.forumChannelID,
                    "DISCORD_API_URL": endpoints.restURL, "SERVER_URL": base, "GATEWAY_SECRET": "daemon-secret-at-least-thirty-two-characters",
                    "GATEWAY_COMPRESSION": "zstd-stream",
                ])
                let clock = ManualClock()
                var backoffCap: Duration = .zero
                let parts = buildGatewayServices(configuration: daemonSettings, logger: testLogger(), forwarderClock: clock) { forwarding, gateway in
                    forwarding.backoffBase = .milliseconds(50)
                    forwarding.backoffCap = .milliseconds(500)
                    gateway.backoffBase = .milliseconds(20)
                    backoffCap = forwarding.backoffCap
                }
                let (forwarder, connection) = (parts.forwarder, parts.connection)
                let daemon = ServiceGroup(services: parts.services, gracefulShutdownSignals: [], logger: testLogger())
                let daemonTask = Task { try await daemon.run() }
                try await eventually("the daemon's gateway connected") { connection.currentStatus.connected }
                #expect(discord.counters.zstdGatewayConnections == 1)

                var replies: [String] = []
                for index in 0..<5 { replies.append(try discord.replyAsAgent(inThread: thread, content: "while the server is down \(index)").id) }
                try await eventually("the replies queued") { forwarder.queued >= 6 }
                // A whole minute away, with the forwarder retrying all along: each step lets one
                // backoff pass, once the forwarder has failed again and gone back to sleep.
                var away: Duration = .zero
                while away < .seconds(60) {
                    try await clock.waitForSleepers(1)
                    clock.advance(by: backoffCap)
                    away += backoffCap
                }
                try await clock.waitForSleepers(1)
                #expect(forwarder.attempts > 100)
                #expect(apns.deliveries.isEmpty)
                #expect(forwarder.queued >= 6)

                try await Self.withServerProcess(configuration, store: store) { _ in
                    clock.advance(by: backoffCap)
                    try await apns.waitUntil("five pushes") { $0.deliveries.count >= 5 }
                    try await eventually("the daemon's queue drained") { forwarder.queued == 0 }
                    let pushed = apns.deliveries.compactMap(PushTests.messageID)
                    #expect(pushed == replies)
                    // A wrong secret is refused.
                    let (status, _) = try await Self.post("\(base)/internal/gateway/events", #"{"events":[]}"#, headers: [("Authorization", "Bearer wrong")])
                    #expect(status == 401)
                }
                // (Not `forwarder.queued == 0` here: what the server did with the replies, a status
                // tag among it, makes Discord dispatch more, which waits in the daemon once the
                // server is gone, as it should.)
                await daemon.triggerGracefulShutdown()
                _ = await daemonTask.result
            }
        }
    }
}
