import Logging
import PostgresNIO
import Synchronization

/// postgres-nio 1.33 never answers a query sent on a connection that is going away: when
/// PostgreSQL restarts at the wrong moment, such a query waits forever, and with it the request
/// and every later request of that user, queued behind the user's lock. (Found by the restart
/// test; about one run in five hung.) So every query of the store runs through `rows`, which gives
/// up soon after the connection closes, and in any case after a deadline just above the server's
/// `statement_timeout`.
extension PostgresConnection {
    static let queryDeadline: Duration = .seconds(35)

    struct QueryAbandoned: Error, CustomStringConvertible {
        let reason: String
        var description: String { "query abandoned: \(reason)" }
    }

    /// Runs `query` and returns all its rows.
    @discardableResult
    func rows(_ query: PostgresQuery, logger: Logger, deadline: Duration = queryDeadline) async throws -> [PostgresRow] {
        let connection = self
        return try await abandoning(
            after: deadline, if: { connection.isClosed },
            { try await connection.query(query, logger: logger).collect() })
    }
}

/// `operation`'s result; or, once `limit` has passed or `gone()` has stayed true for a moment,
/// `StoreUnavailableError`. The operation runs in a task of its own, so one that never finishes
/// cannot hold the caller: it is cancelled and left behind.
func abandoning<T: Sendable>(
    after limit: Duration, if gone: @escaping @Sendable () -> Bool, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let settled = Settled()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        // Unstructured on purpose: a query postgres-nio never answers must be left behind, which
        // a child task (awaited by its group) cannot be.
        let work = Task {
            do {
                let value = try await operation()
                if settled.claim() { continuation.resume(returning: value) }
            } catch {
                if settled.claim() { continuation.resume(throwing: error) }
            }
        }
        // The watch beside it, unstructured for the same reason; it ends when the work settles.
        Task {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: limit)
            var goneSince: ContinuousClock.Instant?
            while !settled.isSettled {
                try? await Task.sleep(for: .milliseconds(100))
                if gone() { goneSince = goneSince ?? clock.now } else { goneSince = nil }
                // A closed connection usually fails its query at once; give it that moment first.
                let abandoned = goneSince.map { $0.duration(to: clock.now) >= .milliseconds(500) } ?? false
                if abandoned || clock.now >= deadline {
                    guard settled.claim() else { return }
                    work.cancel()
                    let reason = abandoned ? "the connection closed" : "no answer within \(limit)"
                    continuation.resume(throwing: StoreUnavailableError(PostgresConnection.QueryAbandoned(reason: reason)))
                    return
                }
            }
        }
    }
}

/// True for the first `claim()` only: whoever gets it resumes the continuation.
private final class Settled: Sendable {
    private let done = Mutex(false)

    var isSettled: Bool { done.withLock { $0 } }

    func claim() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}
