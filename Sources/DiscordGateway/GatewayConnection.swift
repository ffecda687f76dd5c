import NIOFoundationCompat
import Deadlines
import DiscordREST
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOSSL
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// Why the gateway stopped for good.
public struct GatewayFatalError: Error, CustomStringConvertible {
    public let description: String
}

/// Keeps one gateway connection open — identify, heartbeat, resume, reconnect — and hands the
/// support forum's events to a sink. Runs until graceful shutdown, or throws `GatewayFatalError`
/// when Discord says retrying cannot help.
public final class GatewayConnection: Service, Sendable, CustomStringConvertible {
    public struct Configuration: Sendable {
        public var token: String
        /// The support forums whose threads' events are handed over: one per app.
        public var forumChannelIDs: Set<String>
        /// The FAQ forums (one per app that has one) whose posts are forwarded too.
        public var faqChannelIDs: Set<String> = []
        public var discordAPIURL = "https://discord.com/api/v10"
        public var intents = GatewayStateMachine.supportIntents
        public var backoffBase: Duration = .seconds(1)
        public var backoffCap: Duration = .seconds(60)
        /// The least time between two identifies (Discord: `max_concurrency` per 5 s; one shard).
        public var identifySpacing: Duration = .seconds(5)
        /// Largest gateway message accepted (GUILD_CREATE of a big guild is large).
        public var maxMessageSize = 16 << 20
        /// At shutdown, how long events already read may take to be handed over before they are
        /// cancelled (a gap then makes the next start catch up).
        public var drainTimeout: Duration = .seconds(5)
        /// The transport compression asked for (`GATEWAY_COMPRESSION`).
        public var compression = TransportCompression.zlibStream

        public init(token: String, forumChannelID: String, discordAPIURL: String = "https://discord.com/api/v10") {
            self.init(token: token, forumChannelIDs: [forumChannelID], discordAPIURL: discordAPIURL)
        }

        public init(token: String, forumChannelIDs: Set<String>, discordAPIURL: String = "https://discord.com/api/v10") {
            self.token = token
            self.forumChannelIDs = forumChannelIDs
            self.discordAPIURL = discordAPIURL
        }
    }

    public let configuration: Configuration
    private let discord: DiscordClient<AnyClock>
    private let sink: any ForumEventSink
    private let clock: any Clock<Duration>
    /// Told each time the events of a dispatch (the gateway's session id and sequence number) have
    /// been handed to the sink, or found of no interest: a test's wait for "taken in".
    private let handedOver: (@Sendable (_ session: String, _ sequence: Int) -> Void)?
    /// Told after every change of `currentStatus` (a test's wait for "connected").
    private let statusChanged: (@Sendable (Status) -> Void)?

    public var description: String { "GatewayConnection(forums \(configuration.forumChannelIDs.sorted().joined(separator: ", ")))" }
    private let logger: Logger
    private let status = Mutex(Status())

    /// What happened so far, for health checks and tests.
    public struct Status: Sendable, Equatable {
        public var connections = 0
        public var sessions = 0
        public var resumes = 0
        public var connected = false
        /// Times the connection waited for the session start budget to refill.
        public var budgetWaits = 0
    }

    /// - Parameter discord: the process's Discord client, so the gateway's REST calls share its
    ///   rate limits and its 401 breaker (`serve --gateway`); nil makes one of its own.
    /// - Parameter clock: what heartbeats, reconnect backoff and the wait for the identify budget
    ///   sleep on; tests pass one they move by hand.
    public init(
        configuration: Configuration, sink: any ForumEventSink, discord: DiscordClient<AnyClock>? = nil,
        clock: any Clock<Duration> = ContinuousClock(), logger: Logger,
        handedOver: (@Sendable (_ session: String, _ sequence: Int) -> Void)? = nil,
        statusChanged: (@Sendable (Status) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.clock = clock
        self.handedOver = handedOver
        self.statusChanged = statusChanged
        self.discord = discord
            ?? DiscordClient(configuration: .init(baseURL: configuration.discordAPIURL, token: configuration.token), logger: logger)
        self.sink = sink
        self.logger = logger
    }

    public var currentStatus: Status { status.withLock { $0 } }

    private func updateStatus(_ body: (inout Status) -> Void) {
        let now = status.withLock { status in
            body(&status)
            return status
        }
        statusChanged?(now)
    }

    public func run() async throws {
        do {
            try await runUntilShutdown()
        } catch is CancellationError {
            // Graceful shutdown.
        }
    }

    private func runUntilShutdown() async throws {
        try await cancelWhenGracefulShutdown {
            let gateway = try await self.gatewayInfo()
            let machine = Locked(GatewayStateMachine(
                token: self.configuration.token, intents: self.configuration.intents, gatewayURL: gateway.url,
                identifyBudget: gateway.sessionStartLimit.remaining, backoffBase: self.configuration.backoffBase,
                backoffCap: self.configuration.backoffCap, identifySpacing: self.configuration.identifySpacing))
            let filter = ForumEventFilter(
                forumIDs: self.configuration.forumChannelIDs, faqForumIDs: self.configuration.faqChannelIDs, discord: self.discord)
            // Events are handed over in order by one long-lived task, so a connection torn down
            // mid-way never cancels the handling of an event it already read.
            let (events, eventQueue) = AsyncStream.makeStream(of: EventBatch.self)
            let sink = self.sink
            let handedOver = self.handedOver
            let delivery = Task {
                for await batch in events {
                    if !batch.events.isEmpty { await sink.deliver(batch.events) }
                    if let handedOver, let position = batch.position { handedOver(position.session, position.sequence) }
                }
            }
            do {
                var next = machine.withLock { $0.firstConnect }
                while !Task.isCancelled {
                    if next.after > .zero { try await self.clock.sleep(for: next.after) }
                    if machine.withLock({ $0.needsIdentifyBudget }) { try await self.waitForIdentifyBudget(machine) }
                    switch await self.connectOnce(to: next, machine: machine, filter: filter, events: eventQueue) {
                    case .reconnect(let connect): next = connect
                    case .fatal(let message):
                        self.logger.critical("Gateway stopped", metadata: ["reason": "\(message)"])
                        throw GatewayFatalError(description: message)
                    }
                }
            } catch {
                await self.drain(delivery, eventQueue)
                throw error
            }
            await self.drain(delivery, eventQueue)
        }
    }

    /// Hands over what was already read before stopping, within `drainTimeout`: events handled
    /// after this returns would reach servers that are shutting down.
    private func drain(_ delivery: Task<Void, Never>, _ queue: AsyncStream<EventBatch>.Continuation) async {
        queue.finish()
        await Deadlines.drain(delivery, within: configuration.drainTimeout)
    }

    /// The session start budget is spent: read it again, and while it is empty wait for Discord's
    /// `reset_after` (a day at most) instead of identifying beyond it (Discord would reset the
    /// bot's token) or giving up (a daemon that runs for months spends it eventually).
    private func waitForIdentifyBudget(_ machine: Locked<GatewayStateMachine>) async throws {
        while true {
            let limit = try await gatewayInfo().sessionStartLimit
            if limit.remaining > 0 {
                machine.withLock { $0.refillIdentifies(limit.remaining) }
                return
            }
            let wait = Duration.milliseconds(min(max(limit.resetAfter, 100), 86_400_000))
            logger.warning("No gateway session starts left; waiting for Discord's budget to refill", metadata: ["seconds": "\(wait / .seconds(1))"])
            updateStatus { $0.budgetWaits += 1 }
            try await self.clock.sleep(for: wait)
        }
    }

    /// `GET /gateway/bot`, retried until Discord answers (a 401 is fatal).
    private func gatewayInfo() async throws -> DiscordGatewayBot {
        var delay = configuration.backoffBase
        while true {
            do {
                return try await discord.gatewayBot()
            } catch .api(let error) where error.status == 401 {
                throw GatewayFatalError(description: "Discord refused the bot token (401): check DISCORD_TOKEN.")
            } catch {
                logger.warning("Cannot reach Discord for the gateway URL; retrying", metadata: ["error": "\(error)"])
                try await self.clock.sleep(for: delay)
                delay = min(delay * 2, configuration.backoffCap)
            }
        }
    }

    private func connectOnce(
        to connect: GatewayStateMachine.Connect, machine: Locked<GatewayStateMachine>, filter: ForumEventFilter,
        events: AsyncStream<EventBatch>.Continuation
    ) async -> GatewayStateMachine.AfterClose {
        updateStatus {
            $0.connections += 1
            if connect.resume { $0.resumes += 1 }
        }
        let decided = Locked<GatewayStateMachine.AfterClose?>(nil)
        let url = connect.url + (connect.url.contains("?") ? "&" : "?") + "v=10&encoding=json"
            + configuration.compression.query
        var closeCode: UInt16?
        do {
            let frame = try await WebSocketClient.connect(
                url: url,
                configuration: .init(maxFrameSize: configuration.maxMessageSize, closeTimeout: .seconds(5)),
                tlsConfiguration: url.hasPrefix("wss") ? .makeClientConfiguration() : nil,
                logger: logger
            ) { inbound, outbound, _ in
                try await self.converse(
                    inbound: inbound, outbound: outbound, machine: machine, filter: filter, events: events, decided: decided)
            }
            if case .unknown(let code) = frame?.closeCode { closeCode = code }
        } catch {
            logger.notice("Gateway connection lost", metadata: ["error": "\(error)"])
        }
        updateStatus { $0.connected = false }
        if let decision = decided.withLock({ $0 }) { return decision }
        return machine.withLock { $0.connectionClosed(code: closeCode) }
    }

    /// One connection's life: the reader and the heartbeat run side by side until either decides
    /// the connection is over.
    private func converse(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, machine: Locked<GatewayStateMachine>,
        filter: ForumEventFilter, events: AsyncStream<EventBatch>.Continuation, decided: Locked<GatewayStateMachine.AfterClose?>
    ) async throws {
        let (heartbeats, startHeartbeats) = AsyncStream.makeStream(of: (first: Duration, interval: Duration).self)
        /// Carries out actions; false when the connection must end.
        @Sendable func perform(_ actions: [GatewayStateMachine.Action]) async throws -> Bool {
            for action in actions {
                switch action {
                case .send(let payload):
                    try await outbound.write(.text(String(decoding: payload.encoded(), as: UTF8.self)))
                case .startHeartbeats(let first, let interval):
                    startHeartbeats.yield((first, interval))
                case .dispatch(let type, let data):
                    if type == "READY" || type == "RESUMED" {
                        updateStatus {
                            $0.connected = true
                            if type == "READY" { $0.sessions += 1 }
                        }
                        logger.info("Gateway session \(type == "READY" ? "started" : "resumed")")
                        events.yield(EventBatch([.alive]))
                    }
                    let forumEvents = await filter.events(for: type, data: data)
                    let position = machine.withLock { machine in
                        machine.session.flatMap { session in session.sequence.map { (session: session.id, sequence: $0) } }
                    }
                    if !forumEvents.isEmpty || position != nil { events.yield(EventBatch(forumEvents, position: position)) }
                case .gap:
                    events.yield(EventBatch([.gap]))
                case .close(let code, let then):
                    decided.withLock { $0 = .reconnect(then) }
                    try? await outbound.close(.unknown(code), reason: nil)
                    return false
                case .fatal(let message):
                    decided.withLock { $0 = .fatal(message) }
                    try? await outbound.close(.normalClosure, reason: nil)
                    return false
                }
            }
            return true
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await (first, interval) in heartbeats {
                    try await self.clock.sleep(for: first)
                    while try await perform(machine.withLock { $0.heartbeatDue() }) {
                        if self.status.withLock({ $0.connected }) { events.yield(EventBatch([.alive])) }
                        try await self.clock.sleep(for: interval)
                    }
                    return
                }
            }
            group.addTask {
                let decoder = try TransportDecoder(self.configuration.compression, maxMessageSize: self.configuration.maxMessageSize)
                for try await message in inbound.messages(maxSize: self.configuration.maxMessageSize) {
                    let bytes: ByteBuffer
                    switch message {
                    case .text(let string): bytes = ByteBuffer(string: string)
                    case .binary(let buffer):
                        // A broken stream ends the connection (and resumes).
                        guard let whole = try decoder.decode(buffer) else { continue }
                        bytes = whole
                    }
                    guard let payload = try? JSON.parse(Data(buffer: bytes)) else { continue }
                    guard try await perform(machine.withLock { $0.received(payload) }) else { return }
                }
            }
            // Whichever ends first ends the connection.
            _ = try await group.next()
            startHeartbeats.finish()
            group.cancelAll()
        }
    }
}

/// Events to hand over, and the dispatch they came from (once the session has an id).
struct EventBatch: Sendable {
    var events: [ForumEvent]
    var position: (session: String, sequence: Int)?

    init(_ events: [ForumEvent], position: (session: String, sequence: Int)? = nil) {
        self.events = events
        self.position = position
    }
}

/// A mutex that escaping closures can share.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T { try mutex.withLock { try body(&$0) } }
}

extension GatewayConnection.Configuration: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: ["token": "<redacted>", "forumChannelIDs": forumChannelIDs.sorted(), "discordAPIURL": discordAPIURL])
    }
}
