import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceLifecycle
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// The outbox's drain at a graceful stop runs on the server's clock: a delivery under way gets
/// `OutboxSettings.drain` of that clock to end, and is cancelled (its message left in the store)
/// when the clock passes it, however long that takes on the wall clock.
@Suite("The outbox's drain at a stop", .timeLimit(.minutes(3)))
struct OutboxDrainTests {
    /// The first post of a user makes their thread.
    static let route = "/channels/{channel_id}/threads"
    /// The outbox's drain, apart from every other wait of the stop (the shared drain is 9 s).
    static let drain: Duration = .seconds(7)

    /// A server on `clock` whose first delivery is held at Discord when the stop begins; `body`
    /// gets the emulator, the store's path and the server's log once the outbox waits out its drain,
    /// and ends the stop (`running`).
    static func withDeliveryHeldAtStop(
        clock: ManualClock,
        _ body: @Sendable (_ emulator: DiscordEmulator, _ running: Task<Void, any Error>, _ log: DraftRecoveryTests.WatchedLog, _ storePath: String) async throws -> Void
    ) async throws {
        var emulatorConfiguration = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
        // On a clock the test drives, a rate-limit window would end only when the test moves it.
        for keyPath in [\DiscordEmulator.Configuration.messagePostLimit, \.threadCreateLimit, \.defaultRouteLimit, \.globalLimit] {
            emulatorConfiguration[keyPath: keyPath].limit = max(emulatorConfiguration[keyPath: keyPath].limit, 100_000)
        }
        try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: testLogger()) { emulator in
            let discord = await emulator.endpoints()
            var configuration = ServerConfiguration(
                discordToken: discord.botToken, discordAPIURL: discord.restURL, guildID: discord.guildID, forumChannelID: discord.forumChannelID,
                appKey: "test-app-key")
            (configuration.port, configuration.quotas, configuration.statusTags) = (0, .off, nil)
            configuration.desk.commands = false
            configuration.discordGlobalLimit = 100_000
            // The held post waits on no budget of its own: only the drain ends it.
            configuration.discordBudget = .seconds(600)
            configuration.outbox.drain = drain
            let storePath = temporaryStorePath()
            let store = try makeStore(url: "sqlite://\(storePath)", logger: testLogger())
            let log = DraftRecoveryTests.WatchedLog()
            let (ports, portSignal) = AsyncStream.makeStream(of: Int.self)
            let app = buildApplication(
                configuration: configuration, store: store, time: .driven(by: clock), logger: log.logger, onServerRunning: { portSignal.yield($0) })
            let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: testLogger())
            let running = Task { try await group.run() }
            do {
                var iterator = ports.makeAsyncIterator()
                let port = try #require(await iterator.next())
                func post(_ path: String, token: String?, _ body: String) async throws -> JSON {
                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                    request.method = .POST
                    request.headers.add(name: "X-App-Key", value: "test-app-key")
                    request.headers.add(name: "Idempotency-Key", value: UUID().uuidString)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                    request.body = .bytes(ByteBuffer(string: body))
                    let answer = try await HTTPClient.shared.execute(request, timeout: .seconds(60)).body.collect(upTo: 1 << 16)
                    return try JSON.parse(Data(buffer: answer))
                }
                emulator.holdRequests("POST", route)
                let token = try #require(try await post("/v1/session", token: nil, "{}")["token"]?.stringValue)
                _ = try await post("/v1/messages", token: token, #"{"content": "The app freezes"}"#)
                try await emulator.waitUntil("the message's post") { $0.counters.requests("POST", route) == 1 }

                await group.triggerGracefulShutdown()
                try await clock.changes.wait(for: "the outbox's drain on the server's clock", timeout: .seconds(60)) { _ in
                    clock.sleepsLeft.contains(drain)
                }
                try await body(emulator, running, log, storePath)
                emulator.releaseHeldRequests()
            } catch {
                emulator.releaseHeldRequests()
                running.cancel()
                throw error
            }
        }
    }

    @Test func aDeliveryStillUnderWayWhenTheClockPassesTheDrainIsCancelledAndItsMessageWaits() async throws {
        let clock = ManualClock()
        try await Self.withDeliveryHeldAtStop(clock: clock) { emulator, running, log, storePath in
            clock.advance(by: Self.drain)
            try await running.value

            #expect(log.lines.value.contains { $0.hasPrefix("Deliveries still under way at shutdown were cancelled") })
            #expect(emulator.threads().isEmpty, "Discord never answered the post")
            let store = try makeStore(url: "sqlite://\(storePath)", logger: testLogger())
            let usage = try await store.outboxUsage(of: nil)
            #expect(usage.count == 1, "the message waits in the store for the next start")
        }
    }

    @Test func aDeliveryThatEndsWithinTheDrainIsLetFinish() async throws {
        let clock = ManualClock()
        try await Self.withDeliveryHeldAtStop(clock: clock) { emulator, running, log, storePath in
            // Discord answers before the clock passes the drain: the stop waits for the delivery.
            emulator.releaseHeldRequests()
            try await running.value

            #expect(!log.lines.value.contains { $0.hasPrefix("Deliveries still under way at shutdown were cancelled") })
            let thread = try #require(emulator.threads().first)
            #expect(emulator.messages(inThread: thread.id).contains { $0.content.contains("The app freezes") })
            let store = try makeStore(url: "sqlite://\(storePath)", logger: testLogger())
            #expect(try await store.outboxUsage(of: nil).count == 0)
        }
    }
}
