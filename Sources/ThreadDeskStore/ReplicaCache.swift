import Deadlines
import DiscordREST
import PostgresNIO
import Synchronization
import ThreadDeskCore

/// What one replica answers from memory: users by id (the token check), mirror threads, and pages
/// of a thread's mirror (a poll with nothing new asks the same page again and again).
///
/// Every write of these rows, on any replica, sends word of it (`pg_notify`) in the writing
/// transaction, so the word is delivered if and only if the write committed, and in commit order.
/// An entry is used only:
/// - while this replica listens (a lost listener clears everything; reads go to the database
///   until it listens again, and everything is read afresh then), and
/// - after a *barrier*: this replica's own ping, sent after the read began, came back on the
///   listener. Word of every write that committed before the read began came before it, so a
///   change committed on another replica is seen by any read that starts after the commit.
/// A fill is kept only if no word at all came while the database was read. Bounded in entries;
/// any doubt (no listener, a ping that does not come back in time) sends the read to the database.
final class ReplicaCache: Sendable {
    struct PageKey: Hashable, Sendable {
        let cursor: MirrorCursor
        let limit: Int
    }

    /// Entries of each kind at most (pages: in all threads together).
    static let maximumEntries = 20_000
    /// How long a read waits for its barrier before it goes to the database instead.
    static let pingTimeout: Duration = .seconds(1)
    /// The oldest entry used: a word of change lost without the listener noticing costs at most
    /// this much staleness, the same bound as the feed state every replica reads (`FeedState`).
    static let maximumAge: Duration = .seconds(1)

    /// The clock entries age on (tests move their own).
    let now: @Sendable () -> ContinuousClock.Instant
    /// Tests only: words of change are dropped as if lost (pings still pass).
    let dropsChanges = Atomic<Bool>(false)
    /// Tests only: while not nil, everything heard waits here, in order, as if it came late.
    let held = Mutex<[String]?>(nil)

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    fileprivate struct Aged<Value> {
        let value: Value
        let at: ContinuousClock.Instant
    }

    fileprivate struct Waiter {
        let needed: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    fileprivate struct State {
        /// The listener's connection, which also sends the pings (so that a ping never waits for
        /// a pool that reads waiting on their barrier may hold).
        var connection: PostgresConnection?
        var listening: Bool { connection != nil }
        /// Counts (re)connections and losses of the listener: a fill from before one is not kept.
        var generation: UInt64 = 0
        /// Words of change heard: a fill during which one came is not kept.
        var changes: UInt64 = 0
        var users: [UserID: Aged<UserRecord?>] = [:]
        var threads: [Snowflake: Aged<MirrorThread?>] = [:]
        var pages: [Snowflake: [PageKey: Aged<MirrorPage>]] = [:]
        var pageCount = 0
        /// Pings: the last sent, the last back, whether one is on its way.
        var sent: UInt64 = 0
        var returned: UInt64 = 0
        var inFlight = false
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())
    /// A read waits for a ping: wakes the pinger.
    let pingWanted = WakeSignal()
    /// This replica's ping came back.
    let pingReturned = WakeSignal()
    private let counters = Mutex((hits: 0, misses: 0))

    /// Reads answered from memory, and reads that went to the database (tests, metrics).
    var hits: Int { counters.withLock { $0.hits } }
    var misses: Int { counters.withLock { $0.misses } }

    // MARK: The listener

    func listening(on connection: PostgresConnection) {
        state.withLock { state in
            state.connection = connection
            state.generation &+= 1
            state.clear()
        }
    }

    /// The listener is gone: words may be lost from now on.
    func lost() {
        let waiters = state.withLock { state in
            state.connection = nil
            state.generation &+= 1
            state.clear()
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: false) }
    }

    func changed(users: [UserID], threads: [Snowflake], everything: Bool) {
        if dropsChanges.load(ordering: .relaxed) { return }
        state.withLock { state in
            state.changes &+= 1
            if everything { return state.clear() }
            for user in users { state.users[user] = nil }
            for thread in threads {
                state.threads[thread] = nil
                if let pages = state.pages.removeValue(forKey: thread) { state.pageCount -= pages.count }
            }
        }
    }

    func pingCameBack(_ number: UInt64) {
        let woken = state.withLock { state -> [Waiter] in
            guard number > state.returned else { return [] }
            state.returned = number
            let (ready, waiting) = state.waiters.partitioned { $0.needed <= number }
            state.waiters = waiting
            return ready
        }
        for waiter in woken { waiter.continuation.resume(returning: true) }
        pingReturned.signal()
    }

    // MARK: The pinger

    /// The number of the ping to send now and the connection to send it on, if a read waits for
    /// one not sent yet.
    func nextPing() -> (number: UInt64, connection: PostgresConnection)? {
        state.withLock { state in
            guard let connection = state.connection, state.waiters.contains(where: { $0.needed > state.sent }) else {
                state.inFlight = false
                return nil
            }
            state.sent += 1
            state.inFlight = true
            return (state.sent, connection)
        }
    }

    func hasReturned(_ number: UInt64) -> Bool { state.withLock { $0.returned >= number } }

    /// Ping `number` did not come back in time (or could not be sent): its reads go to the database.
    func pingLost(_ number: UInt64) {
        let woken = state.withLock { state -> [Waiter] in
            let (lost, waiting) = state.waiters.partitioned { $0.needed <= number }
            state.waiters = waiting
            return lost
        }
        for waiter in woken { waiter.continuation.resume(returning: false) }
    }

    // MARK: Reads

    /// Where a fill started: kept only if nothing changed since.
    struct Fill {
        let generation: UInt64
        let changes: UInt64
    }

    /// Waits until word of every write committed before now has come; false when that cannot be
    /// known (no listener, a lost ping): then the read goes to the database.
    func barrier() async -> Bool {
        let scope = ReadScope.current
        if let vouched = scope?.vouched.withLock({ $0 }),
            state.withLock({ $0.listening && $0.generation == vouched.generation })
        {
            return true
        }
        var registered: (generation: UInt64, ping: UInt64)?
        let passed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let wake = state.withLock { state -> Bool? in
                guard state.listening else { return nil }
                registered = (state.generation, state.sent + 1)
                state.waiters.append(Waiter(needed: state.sent + 1, continuation: continuation))
                return !state.inFlight
            }
            switch wake {
            case nil: continuation.resume(returning: false)
            case true?: pingWanted.signal()
            case false?: break
            }
        }
        // A waiter passes only in the generation it waited in: a loss in between fails it.
        if passed, let scope, let registered { scope.vouched.withLock { $0 = registered } }
        return passed
    }

    func user(_ id: UserID) -> UserRecord?? { counted(state.withLock { $0.users[id] }) }

    func thread(_ id: Snowflake) -> MirrorThread?? { counted(state.withLock { $0.threads[id] }) }

    func page(_ thread: Snowflake, _ key: PageKey) -> MirrorPage? { counted(state.withLock { $0.pages[thread]?[key] }) }

    private func counted<T>(_ entry: Aged<T>?) -> T? {
        let found = entry.flatMap { now() < $0.at.advanced(by: Self.maximumAge) ? $0.value : nil }
        counters.withLock { found == nil ? ($0.misses += 1) : ($0.hits += 1) }
        return found
    }

    func startFill() -> Fill? {
        state.withLock { state in state.listening ? Fill(generation: state.generation, changes: state.changes) : nil }
    }

    func keep(_ record: UserRecord?, for id: UserID, since fill: Fill) {
        state.withLock { state in
            guard state.unchanged(since: fill) else { return }
            if state.users.count >= Self.maximumEntries { state.users.remove(at: state.users.startIndex) }
            state.users[id] = Aged(value: record, at: now())
        }
    }

    func keep(_ thread: MirrorThread?, for id: Snowflake, since fill: Fill) {
        state.withLock { state in
            guard state.unchanged(since: fill) else { return }
            if state.threads.count >= Self.maximumEntries { state.threads.remove(at: state.threads.startIndex) }
            state.threads[id] = Aged(value: thread, at: now())
        }
    }

    func keep(_ page: MirrorPage, for thread: Snowflake, _ key: PageKey, since fill: Fill) {
        state.withLock { state in
            guard state.unchanged(since: fill) else { return }
            if state.pageCount >= Self.maximumEntries, let evicted = state.pages.first {
                state.pages.remove(at: state.pages.startIndex)
                state.pageCount -= evicted.value.count
            }
            if state.pages[thread, default: [:]].updateValue(Aged(value: page, at: now()), forKey: key) == nil { state.pageCount += 1 }
        }
    }

    /// Entries held (tests: the bound).
    var entries: Int { state.withLock { $0.users.count + $0.threads.count + $0.pageCount } }
}

extension ReplicaCache.State {
    fileprivate mutating func clear() {
        users = [:]
        threads = [:]
        pages = [:]
        pageCount = 0
    }

    fileprivate func unchanged(since fill: ReplicaCache.Fill) -> Bool {
        listening && generation == fill.generation && changes == fill.changes
    }
}

extension Array {
    fileprivate func partitioned(by isFirst: (Element) -> Bool) -> ([Element], [Element]) {
        var first: [Element] = []
        var rest: [Element] = []
        for element in self { if isFirst(element) { first.append(element) } else { rest.append(element) } }
        return (first, rest)
    }
}
