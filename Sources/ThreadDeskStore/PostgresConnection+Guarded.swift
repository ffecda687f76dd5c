import Logging
import NIOCore
import PostgresNIO

/// Every query of the store runs through `rows`, under the process's `QueryWatchdog`: a query
/// postgres-nio never answers (one sent on a connection that is going away) fails soon after the
/// connection closes, and in any case after a deadline just above the server's `statement_timeout`.
extension PostgresConnection {
    static let queryDeadline: Duration = .seconds(35)

    struct QueryAbandoned: Error, CustomStringConvertible {
        let reason: String
        var description: String { "query abandoned: \(reason)" }
    }

    /// Runs `query` and returns all its rows.
    @discardableResult
    func rows(_ query: PostgresQuery, logger: Logger, deadline: Duration = queryDeadline) async throws -> [PostgresRow] {
        // The future-based query: its caller can be answered by the watchdog while it hangs.
        let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: logger)
        return try await QueryWatchdog.shared.rows(of: result, on: self, limit: deadline)
    }
}
