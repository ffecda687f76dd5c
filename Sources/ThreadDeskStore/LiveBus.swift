import Foundation
import Logging
import PostgresNIO

/// How live events reach the other processes that share a store. A store used by one process
/// (SQLite, memory) has none: its events stay in process.
public protocol LiveBus: Sendable {
    /// Tells every other listening process; delivery is best effort (a listener that was away
    /// re-reads what it missed from the mirror). An announcement is one line.
    func announce(_ payloads: [String]) async throws
    /// Hands each announcement to `receive` until cancelled, reconnecting after failures;
    /// `connected` runs after each (re)connection, since announcements may have been missed before it.
    func listen(receive: @escaping @Sendable (String) -> Void, connected: @escaping @Sendable () -> Void) async
}

extension LiveBus {
    public func announce(_ payload: String) async throws {
        try await announce([payload])
    }
}

/// PostgreSQL's LISTEN/NOTIFY: no infrastructure beyond the database every replica already shares.
extension PostgresStore: LiveBus {
    /// NOTIFY payloads must stay under 8,000 bytes.
    public static let maximumAnnouncement = 7_900

    /// Many announcements at once (a reply to each of a thousand users) go out as a few
    /// notifications on one connection: every notification wakes every listening replica.
    public func announce(_ payloads: [String]) async throws {
        let notifications = Self.notifications(packing: payloads)
        guard !notifications.isEmpty else { return }
        try await database {
            try await client.withConnection { connection in
                for text in notifications {
                    _ = try await connection.rows("SELECT pg_notify(\(liveChannel), \(text))", logger: logger)
                }
            }
        }
    }

    /// Announcements packed one per line into as few payloads as NOTIFY's size allows; one
    /// longer than a payload on its own is left out.
    static func notifications(packing payloads: [String]) -> [String] {
        var notifications: [String] = []
        var current = ""
        // Lines are split on bytes: a CR or LF inside an announcement would cut it in two.
        for payload in payloads where payload.utf8.count <= maximumAnnouncement && !payload.utf8.contains(where: { $0 == 10 || $0 == 13 }) {
            if !current.isEmpty, current.utf8.count + 1 + payload.utf8.count > maximumAnnouncement {
                notifications.append(current)
                current = ""
            }
            current += current.isEmpty ? payload : "\n" + payload
        }
        if !current.isEmpty { notifications.append(current) }
        return notifications
    }

    public func listen(receive: @escaping @Sendable (String) -> Void, connected: @escaping @Sendable () -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: liveChannel) { notifications in
                        failures = 0
                        connected()
                        for try await notification in notifications {
                            for line in notification.payload.utf8.split(separator: 10) { receive(String(decoding: line, as: UTF8.self)) }
                        }
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
