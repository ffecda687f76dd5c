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
import NIOPosix
import ServiceLifecycle
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("The gateway daemon and the server apart", .timeLimit(.minutes(2)))
struct GatewayDaemonTests {
    /// A port nobody listens on right now.
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return port
    }

    /// Runs the server until `body` returns.
    static func withServerProcess(
        _ configuration: ServerConfiguration, store: any UserStore, _ body: () async throws -> Void
    ) async throws {
        let app = buildApplication(configuration: configuration, store: store, logger: testLogger())
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: testLogger())
        let running = Task { try await group.run() }
        let url = "http://127.0.0.1:\(configuration.port)/health"
        for _ in 0..<500 {
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(1)), response.status == .ok { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        do {
            try await body()
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
                configuration.port = try await Self.freePort()
                configuration.gatewaySecret = "daemon-secret"
                var settings = APNsSettings(keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
                settings.url = credentials.url
                settings.caCertificatePEM = credentials.caCertificatePEM
                configuration.apns = settings
                let store = try SQLiteStore(path: temporaryStorePath())
                let base = "http://127.0.0.1:\(configuration.port)"
                let device = String(repeating: "cd", count: 32)

                // The user and their thread exist; then the server goes away.
                var thread = ""
                try await Self.withServerProcess(configuration, store: store) {
                    let (_, session) = try await Self.post("\(base)/v1/session", "{}", headers: [("X-App-Key", "app")])
                    let token = try #require(try JSON.parse(Data(session.utf8))["token"]?.stringValue)
                    var push = HTTPClientRequest(url: "\(base)/v1/push-token")
                    push.method = .PUT
                    push.headers.add(name: "Authorization", value: "Bearer \(token)")
                    push.headers.add(name: "Content-Type", value: "application/json")
                    push.body = .bytes(ByteBuffer(string: #"{"token":"\#(device)","environment":"development"}"#))
                    _ = try await HTTPClient.shared.execute(push, timeout: .seconds(5))
                    _ = try await Self.post("\(base)/v1/messages", #"{"content":"hi"}"#, headers: [("Authorization", "Bearer \(token)"), ("Idempotency-Key", "1")])
                    thread = try #require(discord.threads().first?.id)
                }

                // The daemon runs on its own, with the server down.
                var forwarding = HTTPEventForwarder.Configuration(serverURL: base, secret: "daemon-secret")
                forwarding.backoffBase = .milliseconds(50)
                forwarding.backoffCap = .milliseconds(500)
                let forwarder = HTTPEventForwarder(configuration: forwarding, logger: testLogger())
                var gatewayConfiguration = GatewayConnection.Configuration(
                    token: endpoints.botToken, forumChannelID: endpoints.forumChannelID, discordAPIURL: endpoints.restURL)
                gatewayConfiguration.backoffBase = .milliseconds(20)
                let connection = GatewayConnection(configuration: gatewayConfiguration, sink: forwarder, logger: testLogger())
                let daemon = ServiceGroup(services: [forwarder, connection], gracefulShutdownSignals: [], logger: testLogger())
                let daemonTask = Task { try await daemon.run() }
                while !connection.currentStatus.connected { try await Task.sleep(for: .milliseconds(10)) }

                var replies: [String] = []
                for index in 0..<5 { replies.append(try discord.replyAsAgent(inThread: thread, content: "while the server is down \(index)").id) }
                // A whole minute away, with the forwarder retrying all along.
                try await Task.sleep(for: .seconds(60))
                #expect(apns.deliveries.isEmpty)
                #expect(forwarder.queued >= 5)

                try await Self.withServerProcess(configuration, store: store) {
                    for _ in 0..<500 where apns.deliveries.count < 5 { try await Task.sleep(for: .milliseconds(20)) }
                    let pushed = apns.deliveries.compactMap(PushTests.messageID)
                    #expect(pushed == replies)
                    // A wrong secret is refused.
                    let (status, _) = try await Self.post("\(base)/internal/gateway/events", #"{"events":[]}"#, headers: [("Authorization", "Bearer wrong")])
                    #expect(status == 401)
                }
                #expect(forwarder.queued == 0)
                await daemon.triggerGracefulShutdown()
                _ = await daemonTask.result
            }
        }
    }
}
