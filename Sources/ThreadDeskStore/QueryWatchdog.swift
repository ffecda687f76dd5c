import Deadlines
import NIOCore
import PostgresNIO
import Synchronization

/// postgres-nio 1.33 never answers a query sent on a connection that is going away: when
/// PostgreSQL restarts at the wrong moment, such a query waits forever, and with it the request
/// and every later request of that user, queued behind the user's lock. (Found by the restart
/// test; about one run in five hung.) One watch over every query in flight in the process fails
/// such a query in its caller's place: soon after its connection closes, and in any case after a
/// deadline just above the server's `statement_timeout`.
///
/// A query costs an entry in a table and a callback on its result; a connection costs one callback
/// on its close. The watch sleeps until the earliest deadline or a close, and ends once nothing has
/// been in flight for a query's deadline (the next query starts it again): idle, it does nothing.
final class QueryWatchdog: Sendable {
    static let shared = QueryWatchdog()

    /// A closed connection usually fails its queries at once; they get this moment first.
    static let closedGrace: Duration = .milliseconds(500)

    private struct Watched {
        let connection: ObjectIdentifier
        var deadline: ContinuousClock.Instant
        let limit: Duration
        var closed: Bool
        let continuation: CheckedContinuation<[PostgresRow], any Error>
    }

    private struct State {
        var queries: [UInt64: Watched] = [:]
        var nextID: UInt64 = 0
        /// Connections whose close this watches (one callback each, for their lifetime).
        var connections: Set<ObjectIdentifier> = []
        var running = false
        /// The latest deadline of any query seen: the watch lasts until then, so that queries one
        /// after another do not start it anew each.
        var horizon: ContinuousClock.Instant?
        /// When the running watch wakes next, unless signalled.
        var wakesAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let wake = WakeSignal()
    private let clock = ContinuousClock()

    /// Queries in flight (tests).
    var inFlight: Int { state.withLock { $0.queries.count } }
    /// Whether the watch runs (tests: it must not while nothing is in flight).
    var isRunning: Bool { state.withLock { $0.running } }
    /// Times the watch looked at the queries in flight (tests: not once per query, nor per tick).
    var looks: Int { lookCount.load(ordering: .relaxed) }
    private let lookCount = Atomic<Int>(0)

    /// `result`'s rows, or `StoreUnavailableError` once `limit` has passed or `connection` has
    /// been closed for `closedGrace`. A result that comes later is dropped.
    func rows(of result: EventLoopFuture<PostgresQueryResult>, on connection: PostgresConnection, limit: Duration) async throws
        -> [PostgresRow]
    {
        let key = ObjectIdentifier(connection)
        return try await withCheckedThrowingContinuation { continuation in
            let deadline = clock.now.advanced(by: limit)
            let (id, watchClose, start, signal) = state.withLock { state in
                state.nextID &+= 1
                state.queries[state.nextID] = Watched(connection: key, deadline: deadline, limit: limit, closed: false, continuation: continuation)
                state.horizon = max(state.horizon ?? deadline, deadline)
                let watchClose = state.connections.insert(key).inserted
                let start = !state.running
                state.running = true
                let signal = !start && state.wakesAt.map { deadline < $0 } ?? false
                return (state.nextID, watchClose, start, signal)
            }
            if watchClose { connection.closeFuture.whenComplete { _ in self.closed(key) } }
            result.whenComplete { outcome in
                guard let watched = self.state.withLock({ $0.queries.removeValue(forKey: id) }) else { return }
                watched.continuation.resume(with: outcome.map(\.rows))
            }
            if start {
                // Unstructured: a connection belongs to no service. It ends when nothing is in flight.
                Task { await self.watch() }
            } else if signal {
                wake.signal()
            }
        }
    }

    /// The connection is gone: its queries get `closedGrace` to fail by themselves.
    private func closed(_ connection: ObjectIdentifier) {
        let grace = clock.now.advanced(by: Self.closedGrace)
        let signal = state.withLock { state in
            state.connections.remove(connection)
            var any = false
            for (id, var watched) in state.queries where watched.connection == connection && !watched.closed {
                watched.closed = true
                watched.deadline = min(watched.deadline, grace)
                state.queries[id] = watched
                any = true
            }
            return any && state.running
        }
        if signal { wake.signal() }
    }

    private func watch() async {
        while true {
            lookCount.add(1, ordering: .relaxed)
            let now = clock.now
            let (overdue, next) = state.withLock { state -> ([Watched], ContinuousClock.Instant?) in
                var overdue: [Watched] = []
                var next: ContinuousClock.Instant?
                for (id, watched) in state.queries {
                    if watched.deadline <= now {
                        overdue.append(watched)
                        state.queries[id] = nil
                    } else {
                        next = min(next ?? watched.deadline, watched.deadline)
                    }
                }
                if next == nil, let horizon = state.horizon, now < horizon { next = horizon }
                state.wakesAt = next
                if next == nil {
                    state.running = false
                    state.horizon = nil
                }
                return (overdue, next)
            }
            for watched in overdue {
                let reason = watched.closed ? "the connection closed" : "no answer within \(watched.limit)"
                watched.continuation.resume(throwing: StoreUnavailableError(PostgresConnection.QueryAbandoned(reason: reason)))
            }
            guard let next else { return }
            await wake.wait(upTo: now.duration(to: next))
        }
    }
}
