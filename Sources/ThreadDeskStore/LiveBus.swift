import Foundation
import Logging
import PostgresNIO

/// How live events reach the other processes that share a store. A store used by one process
/// (SQLite, memory) has none: its events stay in process.
public protocol LiveBus: Sendable {
    /// Tells every other listening process; delivery is best effort (a listener that was away
    /// re-reads what it missed from the mirror).
    func announce(_ payload: String) async throws
    /// Hands each announcement to `receive` until cancelled, reconnecting after failures;
    /// `connected` runs after each (re)connection, since announcements may have been missed before it.
    func listen(receive: @escaping @Sendable (String) -> Void, connected: @escaping @Sendable () -> Void) async
}

/// PostgreSQL's LISTEN/NOTIFY: no infrastructure beyond the database every replica already shares.
extension PostgresStore: LiveBus {
    /// NOTIFY payloads must stay under 8,000 bytes.
    public static let maximumAnnouncement = 7_900

    public func announce(_ payload: String) async throws {
        guard payload.utf8.count <= Self.maximumAnnouncement else { return }
        try await database {
            try await client.withConnection { connection in
                _ = try await connection.rows("SELECT pg_notify(\(liveChannel), \(payload))", logger: logger)
            }
        }
    }

    public func listen(receive: @escaping @Sendable (String) -> Void, connected: @escaping @Sendable () -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: liveChannel) { notifications in
                        failures = 0
                        connected()
                        for try await notification in notifications { receive(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                failures += 1
                logger.warning("Lost the live-event listener; listening again", metadata: ["error": "\(String(reflecting: error))"])
            }
            // A listener that ended by itself, or failed: wait a little (up to 10 s) before the next try.
            let delay = Duration.milliseconds(min(10_000, 250 << min(failures, 6)))
            try? await Task.sleep(for: delay)
        }
    }
}
