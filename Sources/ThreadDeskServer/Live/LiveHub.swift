import Deadlines
import Foundation
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing

/// What an open event stream hears from the hub.
enum LiveSignal: Sendable, Equatable {
    /// The user's mirror or read state changed: read what is new since the stream's position.
    case changed
    /// An agent is typing in the user's thread, until `expiresAt`.
    case typing(expiresAt: Date)
    /// Time for a keep-alive comment.
    case keepAlive
    /// Some of the user's tokens may have ended (a sign-out, a session past the limit, a claim
    /// replaced): a stream whose token is no longer live ends.
    case tokensChanged
}

/// The open `/v1/events` streams of this process, by user. Ingestion and read receipts tell it
/// which user changed; it wakes that user's streams here and, through the store's `LiveBus`
/// (PostgreSQL LISTEN/NOTIFY), in every other replica. A signal is only a wake-up: each stream
/// reads what it missed from the mirror, so a lost or repeated signal never loses or repeats an event.
///
/// One timer serves every stream: it sends the keep-alives, a slice of the streams at each tick
/// (`KeepAliveRounds`), and closes streams whose client has stopped reading (a write pending
/// longer than `writeTimeout`), which frees what they hold.
final class LiveHub: Service, Sendable {
    struct Settings: Sendable {
        var keepAlive: Duration = .seconds(20)
        var writeTimeout: Duration = .seconds(30)
        var maxDuration: Duration = .seconds(3600)
        var maxStreams = 20_000
        var streamsPerUser = 8
        var streamsPerAddress = 500
        /// The apps that reserved streams of `maxStreams` (`AppLimits.streams`).
        var streamShares: [AppID: Int] = [:]
    }

    enum TooManyStreams: Error {
        /// The process holds `maxStreams`.
        case inAll
        /// The client's address holds `streamsPerAddress`.
        case fromAddress
    }

    struct State {
        var nextID: UInt64 = 0
        var streams: [UserID: [UInt64: Subscriber]] = [:]
        /// The same streams by keep-alive slot (`KeepAliveRounds`): a tick takes its slot's alone.
        var bySlot: [[UInt64: Subscriber]]
        var count = 0
        var byAddress: [String: Int] = [:]
        var byApp: StreamShares
        var stopped = false
        var heapTrim = HeapTrimPolicy()

        init(slots: Int, shares: StreamShares) {
            bySlot = Array(repeating: [:], count: slots)
            byApp = shares
        }

        mutating func insert(_ subscriber: Subscriber) {
            streams[subscriber.user, default: [:]][subscriber.id] = subscriber
            bySlot[slot(of: subscriber)][subscriber.id] = subscriber
            count += 1
            byAddress[subscriber.address, default: 0] += 1
            byApp.opened(subscriber.user.app)
        }

        mutating func remove(_ subscriber: Subscriber) -> Bool {
            guard streams[subscriber.user]?.removeValue(forKey: subscriber.id) != nil else { return false }
            if streams[subscriber.user]?.isEmpty == true { streams[subscriber.user] = nil }
            bySlot[slot(of: subscriber)][subscriber.id] = nil
            count -= 1
            let left = (byAddress[subscriber.address] ?? 1) - 1
            byAddress[subscriber.address] = left > 0 ? left : nil
            byApp.closed(subscriber.user.app)
            return true
        }

        private func slot(of subscriber: Subscriber) -> Int { Int(subscriber.id % UInt64(bySlot.count)) }
        /// Announcements not yet sent to other replicas, one per user and kind.
        var outbox: [String: String] = [:]
    }

    let settings: Settings
    let bus: (any LiveBus)?
    let logger: Logger
    private let metrics: ServerMetrics
    /// What the timer sleeps on and the sweep reads: a stream's lifetime and a stalled write are
    /// measured on it (`elapsed`), so a test moves them with its clock.
    let time: ServerTime
    /// Told how many streams are open and how many were dropped (what a test awaits).
    private let work: BackgroundWork
    let state: Mutex<State>
    /// Tells this replica's own announcements from the others'.
    let origin = UUID().uuidString.prefix(8).lowercased()
    let outboxSignal = WakeSignal()
    /// Wakes the timer resting while no stream was open.
    private let streamOpened = WakeSignal()
    /// Stream handlers in a pipeline (`EventStreamHandler`), ended or not: a stop waits for them
    /// to write their last chunk and close.
    private let handlers = Atomic<Int>(0)
    private let handlerGone = WakeSignal()

    /// A change heard in a trace (an agent's reply being ingested) wakes the streams in it, here
    /// and, through the bus, on the replica that holds them.
    let traces: Traces

    init(
        settings: Settings, bus: (any LiveBus)?, metrics: ServerMetrics, logger: Logger, time: ServerTime, traces: Traces = .off,
        work: BackgroundWork = .untracked
    ) {
        self.traces = traces
        self.time = time
        self.work = work
        self.settings = settings
        state = Mutex(State(slots: Self.rounds(settings).slots, shares: StreamShares(shares: settings.streamShares, maxStreams: settings.maxStreams)))
        self.bus = bus
        self.metrics = metrics
        self.logger = logger
    }

    var openStreams: Int { state.withLock { $0.count } }

    /// The open streams, and the streams closed for a stalled write, as `BackgroundWork` levels.
    static let openLevel = "live streams"
    static let droppedLevel = "live streams dropped"

    /// A moment of `time`'s clock as the subscribers' stamps hold it (nanoseconds since `time` began).
    static func stamp(_ elapsed: Duration) -> UInt64 {
        let (seconds, attoseconds) = elapsed.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Registers a stream for `user`. Past `streamsPerUser` the user's oldest stream is closed (a
    /// device reconnecting before its old connection timed out); past `maxStreams` in all, or
    /// past what the user's app may hold of them (`StreamShares`), refused.
    func subscribe(
        _ user: UserID, address: String, tokenHash: String, connection: any Channel
    ) throws(TooManyStreams) -> Subscriber {
        let (subscriber, evicted) = try state.withLock { state throws(TooManyStreams) -> (Subscriber, Subscriber?) in
            guard !state.stopped, state.count < settings.maxStreams, state.byApp.admits(user.app) else { throw .inAll }
            var evicted: Subscriber?
            if let mine = state.streams[user], mine.count >= settings.streamsPerUser, let oldest = mine.keys.min().flatMap({ mine[$0] }) {
                evicted = oldest
                _ = state.remove(oldest)
            }
            guard state.byAddress[address, default: 0] < settings.streamsPerAddress else {
                // The user's oldest stream stays: nothing new is opened.
                if let evicted { state.insert(evicted) }
                throw .fromAddress
            }
            state.nextID += 1
            state.heapTrim.opened(at: Self.stamp(time.elapsed()))
            let subscriber = Subscriber(
                id: state.nextID, user: user, address: address, tokenHash: tokenHash, lifetime: settings.maxDuration, connection: connection,
                elapsed: time.elapsed)
            state.insert(subscriber)
            return (subscriber, evicted)
        }
        if let evicted {
            work.adjust(Self.openLevel, by: -1)
            evicted.finish()
            evicted.close()
        }
        work.adjust(Self.openLevel, by: 1)
        streamOpened.signal()
        metrics.live.streams.set(to: Double(openStreams))
        return subscriber
    }

    func unsubscribe(_ subscriber: Subscriber) {
        let (removed, count) = state.withLock { state in (state.remove(subscriber), state.count) }
        if removed { work.adjust(Self.openLevel, by: -1) }
        subscriber.finish()
        metrics.live.streams.set(to: Double(count))
    }

    /// `user`'s conversation changed: wakes their streams everywhere.
    func changed(_ user: UserID) {
        deliver(user, .changed, trace: traces.current())
        announce(Announcement(origin: String(origin), user: user.rawValue, typingUntil: nil, trace: traces.traceparent()))
    }

    /// Some of `user`'s tokens ended: their streams everywhere check theirs and end if it was one.
    func tokensChanged(_ user: UserID) {
        deliver(user, .tokensChanged)
        announce(Announcement(origin: String(origin), user: user.rawValue, typingUntil: nil, tokens: true))
    }

    /// An agent types in `user`'s thread until `expiresAt`.
    func typing(_ user: UserID, until expiresAt: Date) {
        deliver(user, .typing(expiresAt: expiresAt))
        announce(Announcement(origin: String(origin), user: user.rawValue, typingUntil: expiresAt.timeIntervalSince1970))
    }

    func deliver(_ user: UserID, _ signal: LiveSignal, trace: TraceContext? = nil) {
        let subscribers = state.withLock { state in state.streams[user].map { Array($0.values) } ?? [] }
        for subscriber in subscribers { subscriber.signal(signal, trace: trace) }
    }

    private func broadcast(_ signal: LiveSignal) {
        for subscriber in allSubscribers() { subscriber.signal(signal) }
    }

    private func allSubscribers() -> [Subscriber] {
        state.withLock { state in state.streams.values.flatMap(\.values) }
    }

    // MARK: Running

    /// Keep-alives and stall checks until graceful shutdown, then ends every stream (their
    /// responses finish, so the server's drain is not held up by them).
    func run() async throws {
        await withDiscardingTaskGroup { group in
            if let bus {
                group.addTask {
                    // After a (re)connection, streams re-read: announcements may have been missed.
                    await bus.listen(receive: { [weak self] in self?.received($0) }, connected: { [weak self] in
                        self?.broadcast(.changed)
                        self?.broadcast(.tokensChanged)
                    })
                }
            }
            if let bus { group.addTask { await self.sendAnnouncements(bus) } }
            group.addTask { await self.tick() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        let streams = state.withLock { state in
            state.stopped = true
            return state.streams.values.flatMap(\.values)
        }
        for stream in streams { stream.finish() }
        await handlersClosed(within: min(settings.writeTimeout, .seconds(5)))
    }

    /// A stream's handler joined its connection's pipeline.
    func handlerAdded() { handlers.add(1, ordering: .relaxed) }

    /// A stream's handler left its pipeline (its connection closed).
    func handlerRemoved() {
        if handlers.subtract(1, ordering: .relaxed).newValue == 0 { handlerGone.signal() }
    }

    /// Waits, up to `limit`, until every stream's connection has closed: the streams that ended
    /// at the stop (the server's quiesce or `finish` above) write their last chunk first. The
    /// HTTP server no longer waits for them, since they have no task.
    private func handlersClosed(within limit: Duration) async {
        let deadline = time.elapsed() + limit
        while handlers.load(ordering: .relaxed) > 0 {
            guard time.elapsed() < deadline else {
                logger.notice("Event streams still closing at the stop", metadata: ["streams": "\(handlers.load(ordering: .relaxed))"])
                return
            }
            await time.wait(for: handlerGone, untilElapsed: deadline)
        }
    }

    private static func rounds(_ settings: Settings) -> KeepAliveRounds {
        KeepAliveRounds(keepAlive: settings.keepAlive, writeTimeout: settings.writeTimeout, maxDuration: settings.maxDuration)
    }

    private func tick() async {
        var rounds = Self.rounds(settings)
        while !Task.isCancelled {
            // Ticks come often (a slice of the streams each): with none open, the timer rests
            // until one opens (a wait a cancellation leaves whole).
            if openStreams == 0, !(await streamOpened.wait()) { return }
            guard (try? await time.sleep(for: rounds.tick)) != nil else { return }
            let slot = rounds.advance()
            if rounds.sweepDue() { sweep() }
            if let slot {
                let due = state.withLock { state in state.bySlot[slot].values.compactMap(\.handler) }
                EventStreamSink.keepAlive(due)
            }
        }
    }

    /// Closes the streams whose client stopped reading (a write pending past `writeTimeout`) and
    /// ends those whose lifetime is over.
    private func sweep() {
        let now = Self.stamp(time.elapsed())
        if state.withLock({ $0.heapTrim.trimDue(at: now) }) {
            let trimmed = trimHeap()
            logger.info("A burst of stream openings is over: free heap memory given back", metadata: ["trimmed": "\(trimmed)"])
        }
        for subscriber in allSubscribers() {
            if subscriber.handler == nil, !subscriber.connection.isActive {
                // Its answer never began (the client left while it was being opened): nothing
                // else would let it go.
                unsubscribe(subscriber)
            } else if subscriber.stalled(at: now, limit: settings.writeTimeout) {
                logger.info("Closing an event stream whose client stopped reading", metadata: ["user": "\(subscriber.user.logValue)"])
                metrics.live.dropped.increment()
                work.adjust(Self.droppedLevel, by: 1)
                subscriber.close()
            } else if subscriber.expired(at: now) {
                // Ends the response normally; the client resumes from its last event.
                subscriber.finish()
            }
        }
    }
}

extension LiveHub: MirrorListener {
    /// What the user can see changed: their streams here (and, through the bus, elsewhere) wake.
    func mirrorTookIn(_ intake: MirrorIntake) {
        if intake.visibleToUser { changed(intake.owner) }
    }
}
