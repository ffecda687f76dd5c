import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// Collects what the connection hands over, and how far (the gateway's session and sequence
/// number), so a test awaits the events the emulator sent instead of polling for them.
final class CollectingSink: ForumEventSink {
    private let received = Mutex<[ForumEvent]>([])
    private let positions = Mutex<[String: Int]>([:])
    /// Moves with every delivery, hand-over and change of the connection's status.
    let changes = Watched(0)
    var events: [ForumEvent] { received.withLock { $0 } }
    func deliver(_ events: [ForumEvent]) async {
        received.withLock { $0 += events }
        changes.update { $0 += 1 }
    }

    /// For `GatewayConnection(handedOver:)`.
    var handedOver: @Sendable (String, Int) -> Void {
        { session, sequence in
            self.positions.withLock { $0[session] = max($0[session] ?? 0, sequence) }
            self.changes.update { $0 += 1 }
        }
    }

    /// For `GatewayConnection(statusChanged:)`.
    var statusChanged: @Sendable (GatewayConnection.Status) -> Void { { _ in self.changes.update { $0 += 1 } } }

    /// A connection to `emulator` that reports here.
    func connection(_ configuration: GatewayConnection.Configuration, clock: any Clock<Duration> = ContinuousClock()) -> GatewayConnection {
        GatewayConnection(
            configuration: configuration, sink: self, clock: clock, logger: quiet, handedOver: handedOver, statusChanged: statusChanged)
    }

    /// Waits until the connection has handed over everything `emulator` dispatched to its
    /// sessions (and at least one session's worth).
    func caughtUp(with emulator: DiscordEmulator, _ what: String = "every event the emulator sent taken in") async throws {
        let sent = emulator.gatewayPositions
        try await changes.wait(for: "\(what): sent \(sent), taken \(positions.withLock { $0 })") { _ in
            let taken = positions.withLock { $0 }
            // This connection's sessions (the emulator may serve other connections too).
            return !taken.isEmpty && sent.filter { taken[$0.key] != nil }.allSatisfy { (taken[$0.key] ?? 0) >= $0.value }
        }
    }

    /// Waits until `condition` holds, checked after each delivery, hand-over and status change.
    func wait(for what: String, until condition: () -> Bool) async throws {
        try await changes.wait(for: what) { _ in condition() }
    }
}

private let quiet: Logger = {
    var logger = Logger(label: "gateway-test")
    logger.logLevel = .critical
    return logger
}()

@Suite("Gateway connection against the Discord emulator", .timeLimit(.minutes(1)))
struct GatewayConnectionTests {
    private func configuration(_ endpoints: DiscordEmulator.Endpoints) -> GatewayConnection.Configuration {
        var configuration = GatewayConnection.Configuration(
            token: endpoints.botToken, forumChannelID: endpoints.forumChannelID, discordAPIURL: endpoints.restURL)
        configuration.backoffBase = .milliseconds(20)
        return configuration
    }

    @Test func forwardsOnlyTheForumsThreadsAndSignalsTheNewSession() async throws {
        try await DiscordEmulator.withRunning(logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let client = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: quiet)
            // Created before the connection: known from GUILD_CREATE.
            let early = try await client.startForumThread(in: endpoints.forumChannelID, .init(name: "early", message: .init(content: "e")))
            let sink = CollectingSink()
            let connection = sink.connection(configuration(endpoints))
            try await Self.running(connection) {
                try await sink.wait(for: "the gateway connected") { connection.currentStatus.connected }
                let reply = try emulator.replyAsAgent(inThread: early.channel.id, content: "to an early thread")
                let late = try await client.startForumThread(in: endpoints.forumChannelID, .init(name: "late", message: .init(content: "l")))
                try emulator.deleteThread(late.channel.id)
                try await sink.caughtUp(with: emulator)
                #expect(sink.events.filter { $0 != .alive }.count >= 4, "four forum events")
                let events = sink.events.filter { $0 != .alive }
                let created = events.compactMap { event -> String? in
                    if case .messageCreated(let message) = event { return message.id }
                    return nil
                }
                #expect(events.first == .gap)
                #expect(created == [reply.id, late.message.id])
                #expect(events.contains(.threadDeleted(threadID: late.channel.id)))
                #expect(sink.events.contains(.alive))
            }
        }
    }

    @Test(arguments: TransportCompression.allCases)
    func readsCompressedAndPlainTransportsAlike(compression: TransportCompression) async throws {
        try await DiscordEmulator.withRunning(logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let client = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: quiet)
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .init(name: "zlib", message: .init(content: "z")))
            let sink = CollectingSink()
            var settings = configuration(endpoints)
            settings.compression = compression
            let connection = sink.connection(settings)
            try await Self.running(connection) {
                try await sink.wait(for: "the gateway connected") { connection.currentStatus.connected }
                // Enough replies that later payloads lean on the stream's shared dictionary.
                var ids: [String] = []
                for index in 0..<30 {
                    ids.append(try emulator.replyAsAgent(inThread: thread.channel.id, content: "reply \(index) " + String(repeating: "ab", count: index * 40)).id)
                }
                try await sink.caughtUp(with: emulator)
                let received = sink.events.compactMap { event -> String? in
                    if case .messageCreated(let message) = event { return message.id }
                    return nil
                }
                #expect(received == ids, "every reply over the gateway")
            }
            #expect(emulator.counters.compressedGatewayConnections == (compression == .zlibStream ? 1 : 0))
            #expect(emulator.counters.zstdGatewayConnections == (compression == .zstdStream ? 1 : 0))
            #expect(emulator.counters.gatewayConnections == 1)
        }
    }

    /// The same events to three connections, one per transport: both compressions carry a small
    /// fraction of the plain bytes (what the small VM's network is spared).
    @Test func compressionCarriesAFractionOfThePlainBytes() async throws {
        var emulatorConfiguration = DiscordEmulator.Configuration()
        emulatorConfiguration.maxConcurrency = 3
        try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let client = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: quiet)
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .init(name: "bytes", message: .init(content: "b")))
            let sinks = TransportCompression.allCases.map { _ in CollectingSink() }
            let connections = zip(TransportCompression.allCases, sinks).map { compression, sink in
                var settings = configuration(endpoints)
                settings.compression = compression
                return sink.connection(settings)
            }
            let runs = connections.map { connection in Task { try await connection.run() } }
            defer { runs.forEach { $0.cancel() } }
            for (sink, connection) in zip(sinks, connections) {
                try await sink.wait(for: "three sessions") { connection.currentStatus.connected }
            }
            var ids: [String] = []
            for index in 0..<100 {
                ids.append(try emulator.replyAsAgent(inThread: thread.channel.id, content: "Thanks for the report \(index), we are looking into it.").id)
            }
            for sink in sinks {
                try await sink.caughtUp(with: emulator)
                let received = sink.events.compactMap { event -> String? in
                    if case .messageCreated(let message) = event { return message.id }
                    return nil
                }
                #expect(received == ids, "every reply on every connection")
            }
            let sent = emulator.counters.gatewayBytesSent
            let plain = try #require(sent["none"])
            #expect(try #require(sent["zlib-stream"]) * 4 < plain, "\(sent)")
            #expect(try #require(sent["zstd-stream"]) * 4 < plain, "\(sent)")
        }
    }

    @Test func aSpentIdentifyBudgetIsWaitedForNotExceeded() async throws {
        // The emulator's budget window and the connection's waits run on one clock the test moves.
        let clock = ManualClock()
        var emulatorConfiguration = DiscordEmulator.Configuration()
        emulatorConfiguration.identifyBudget = 1
        // Longer than the pause before identifying again (`identifySpacing`, 5 s).
        let identifyWindow = Duration.seconds(8)
        emulatorConfiguration.identifyWindow = identifyWindow
        emulatorConfiguration.clock = .init(clock)
        try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let connection = Self.connection(configuration(endpoints), on: clock)
            try await Self.running(connection) {
                try await clock.changes.wait(for: "the first session") { _ in connection.currentStatus.sessions == 1 }
                // Discord ends the session: a new one needs an identify the budget no longer has.
                emulator.sendInvalidSession(resumable: false)
                // Once the connection is closed (its heartbeat with it), the pause before the next
                // identify is all that sleeps; then the wait for the budget is.
                try await clock.changes.wait(for: "the pause before identifying again") { _ in
                    !connection.currentStatus.connected && clock.sleeperCount == 1
                }
                try clock.advanceToNextDeadline()
                try await clock.changes.wait(for: "the wait for the budget") { _ in
                    connection.currentStatus.budgetWaits >= 1 && clock.sleeperCount == 1
                }
                #expect(emulator.counters.identifies == 1)
                #expect(connection.currentStatus.sessions == 1)
                try clock.advanceToNextDeadline()
                try await clock.changes.wait(for: "a second session once the budget refilled") { _ in connection.currentStatus.sessions == 2 }
                #expect(emulator.counters.identifies == 2)
                // Not a moment before the budget's window ended.
                #expect(clock.now.offset >= identifyWindow)
            }
        }
    }

    @Test func heartbeatsAndReconnectBackoffRunOnTheInjectedClock() async throws {
        try await DiscordEmulator.withRunning(logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let clock = ManualClock()
            var settings = configuration(endpoints)
            settings.backoffBase = .seconds(30)
            settings.backoffCap = .seconds(60)
            let connection = Self.connection(settings, on: clock)
            try await Self.running(connection) {
                try await clock.changes.wait(for: "the gateway connected") { _ in connection.currentStatus.connected }
                // The heartbeat waits on the clock: nothing goes out until the test moves it.
                try await clock.waitForSleepers(1)
                let beats = emulator.counters.heartbeats
                #expect(beats == 0)
                clock.advance(by: .milliseconds(41_250))
                try await emulator.waitUntil("a heartbeat once the clock passed the first beat") { $0.counters.heartbeats == beats + 1 }

                // A dropped connection comes back only after its backoff, on the clock.
                emulator.dropGatewayConnections()
                try await clock.changes.wait(for: "the drop noticed, the backoff sleeping") { _ in
                    !connection.currentStatus.connected && clock.sleeperCount == 1
                }
                #expect(connection.currentStatus.connections == 1)
                clock.advance(by: .seconds(60))
                try await clock.changes.wait(for: "the reconnection after the backoff") { _ in
                    connection.currentStatus.connections == 2 && connection.currentStatus.connected
                }
                #expect(connection.currentStatus.resumes == 1)
            }
        }
    }

    /// A connection on `clock` whose status changes move the clock's `changes` too, so a test
    /// awaits a mix of the two (connected, and sleeping on the clock) without polling.
    static func connection(_ configuration: GatewayConnection.Configuration, on clock: ManualClock) -> GatewayConnection {
        GatewayConnection(
            configuration: configuration, sink: CollectingSink(), clock: clock, logger: quiet,
            statusChanged: { _ in clock.changes.update { $0 += 1 } })
    }

    /// Runs `connection` during `body`, then stops it and waits until it has.
    static func running(_ connection: GatewayConnection, _ body: () async throws -> Void) async throws {
        let run = Task { try await connection.run() }
        do {
            try await body()
        } catch {
            run.cancel()
            _ = await run.result
            throw error
        }
        run.cancel()
        try await run.value
    }

    @Test func aRejectedTokenOnTheGatewayStopsWithAClearError() async throws {
        try await DiscordEmulator.withRunning(logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let sink = CollectingSink()
            let connection = sink.connection(configuration(endpoints))
            let run = Task { try await connection.run() }
            do {
                try await sink.wait(for: "the gateway connected") { connection.currentStatus.connected }
            } catch {
                run.cancel()
                _ = await run.result
                throw error
            }
            emulator.closeGatewayConnections(code: 4004, reason: "Authentication failed.")
            let outcome = await run.result
            guard case .failure(let error as GatewayFatalError) = outcome else {
                Issue.record("expected a fatal error, got \(outcome)")
                return
            }
            #expect(error.description.contains("4004"))
            #expect(error.description.contains("DISCORD_TOKEN"))
            // No reconnect loop: one connection only.
            #expect(emulator.counters.gatewayConnections == 1)
        }
    }

    @Test func disallowedIntentsStopWithAClearError() async throws {
        var emulatorConfiguration = DiscordEmulator.Configuration()
        emulatorConfiguration.messageContentIntentEnabled = false
        try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: quiet) { emulator in
            let endpoints = await emulator.endpoints()
            let connection = GatewayConnection(configuration: configuration(endpoints), sink: CollectingSink(), logger: quiet)
            await #expect(throws: GatewayFatalError.self) { try await connection.run() }
            #expect(emulator.counters.gatewayConnections == 1)
        }
    }
}
