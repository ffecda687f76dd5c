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
        /// Resident bytes at the last moment no stream was open: what `threaddesk_live_bytes_per_stream` counts from.
        var residentWithoutStreams: Int?

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
    let metrics: ServerMetrics
    /// What the timer sleeps on and the sweep reads: a stream's lifetime and a stalled write are
    /// measured on it (`elapsed`), so a test moves them with its clock.
    let time: ServerTime
    /// Told how many streams are open and how many were dropped (what a test awaits).
    let work: BackgroundWork
    let state: Mutex<State>
    /// Tells this replica's own announcements from the others'.
    let origin = UUID().uuidString.prefix(8).lowercased()
    let outboxSignal = WakeSignal()
    /// Wakes the timer resting while no stream was open.
    let streamOpened = WakeSignal()
    /// Stream handlers in a pipeline (`EventStreamHandler`), ended or not: a stop waits for them
    /// to write their last chunk and close.
    let handlers = Atomic<Int>(0)
    let handlerGone = WakeSignal()
    /// When the first stream heard the listener's quiesce (`stamp`, 0 before): the stop's log says
    /// how long the streams' endings took before the hub's turn came.
    let quiesced = Atomic<UInt64>(0)

    /// A change heard in a trace (an agent's reply being ingested) wakes the streams in it, here
    /// and, through the bus, on the replica that holds them.
    let traces: Traces
    /// The stop's shared drain: at the stop the hub waits for its streams' connections to close
    /// until the drain is over (`SHUTDOWN_GRACE_SECONDS` less its last second), not a fixed time.
    let drain: ShutdownDrain?

    init(
        settings: Settings, bus: (any LiveBus)?, metrics: ServerMetrics, logger: Logger, time: ServerTime, traces: Traces = .off,
        drain: ShutdownDrain? = nil, work: BackgroundWork = .untracked
    ) {
        self.traces = traces
        self.drain = drain
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
        // Read outside the lock, and only while none is open: the first of a burst reads it.
        let resident = openStreams == 0 ? ProcessMemory.residentBytes() : nil
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
            if state.count == 0, let resident { state.residentWithoutStreams = resident }
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

    func broadcast(_ signal: LiveSignal) {
        for subscriber in allSubscribers() { subscriber.signal(signal) }
    }

    func allSubscribers() -> [Subscriber] {
        state.withLock { state in state.streams.values.flatMap(\.values) }
    }
}

extension LiveHub: MirrorListener {
    /// What the user can see changed: their streams here (and, through the bus, elsewhere) wake.
    func mirrorTookIn(_ intake: MirrorIntake) {
        if intake.visibleToUser { changed(intake.owner) }
    }
}
