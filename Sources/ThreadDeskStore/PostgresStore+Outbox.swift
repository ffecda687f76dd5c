import DiscordREST
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    static let outboxSchema = [
        """
        CREATE TABLE IF NOT EXISTS outbox_items (
            id BIGINT PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL, idempotency_key TEXT NOT NULL,
            suggestion_id TEXT, accepted_at DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL, next_attempt_at DOUBLE PRECISION NOT NULL,
            posted_parts TEXT NOT NULL, failure TEXT, size BIGINT NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS outbox_items_owner ON outbox_items (owner, id)",
        "CREATE INDEX IF NOT EXISTS outbox_items_waiting ON outbox_items (owner, id) WHERE failure IS NULL",
        """
        CREATE TABLE IF NOT EXISTS outbox_files (
            item_id BIGINT NOT NULL, position INTEGER NOT NULL, filename TEXT NOT NULL, content_type TEXT, bytes BYTEA NOT NULL,
            PRIMARY KEY (item_id, position))
        """,
        "CREATE TABLE IF NOT EXISTS outbox_holds (owner TEXT PRIMARY KEY, holder TEXT NOT NULL, until DOUBLE PRECISION NOT NULL)",
    ]

    /// Adds accepted messages, in the transaction `connection` is in (the one that accepts them).
    static func enqueue(_ items: [OutboxItem], on connection: PostgresConnection, logger: Logger) async throws {
        for item in items {
            let added = try await connection.rows(
                """
                INSERT INTO outbox_items (id, owner, kind, content, idempotency_key, suggestion_id, accepted_at, attempts, next_attempt_at,
                    posted_parts, failure, size, may_start_thread, trace_parent)
                VALUES (\(item.id.column), \(item.owner.rawValue), \(item.kind.rawValue), \(item.content), \(item.idempotencyKey),
                    \(item.suggestionID), \(item.acceptedAt.timeIntervalSince1970), \(item.attempts), \(item.nextAttempt.timeIntervalSince1970),
                    \(OutboxColumns.parts(item.postedParts)), \(OutboxColumns.failure(item.failure)), \(Int64(item.size)),
                    \(item.mayStartThread), \(item.traceparent))
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, logger: logger)
            guard !added.isEmpty else {
                // Kept already: the same message (a commit retried) is no error; another's is.
                let kept = try await connection.rows(
                    "SELECT owner, idempotency_key FROM outbox_items WHERE id = \(item.id.column)", logger: logger
                ).first.map { try $0.decode((String, String).self) }
                guard kept?.0 == item.owner.rawValue, kept?.1 == item.idempotencyKey else { throw OutboxIDTaken(id: item.id) }
                continue
            }
            for (position, file) in item.files.enumerated() {
                try await connection.rows(
                    """
                    INSERT INTO outbox_files (item_id, position, filename, content_type, bytes)
                    VALUES (\(item.id.column), \(position), \(file.filename), \(file.contentType), \(ByteBuffer(data: file.bytes)))
                    """, logger: logger)
            }
        }
    }

    /// An item's columns and, per file, the file's: one row per file (one with no file's for an
    /// item without), from one statement, so a delivery ending meanwhile takes both or neither.
    private static let itemWithFiles = """
        SELECT i.id, i.owner, i.kind, i.content, i.idempotency_key, i.suggestion_id, i.accepted_at, i.attempts, i.next_attempt_at,
            i.posted_parts, i.failure, f.filename, f.content_type, f.bytes, i.may_start_thread, i.trace_parent
        FROM outbox_items i LEFT JOIN outbox_files f ON f.item_id = i.id
        """

    private static func items(_ rows: [PostgresRow]) throws -> [OutboxItem] {
        var items: [OutboxItem] = []
        for row in rows {
            let (id, owner, kind, content, key, suggestion, accepted, attempts, next, parts, failure, filename, contentType, bytes, mayStart, trace) =
                try row.decode(
                    (Int64, String, String, String, String, String?, Double, Int, Double, String, String?, String?, String?, ByteBuffer?, Bool, String?).self)
            let file = filename.map { OutboxItem.File(filename: $0, contentType: contentType, bytes: Data(buffer: bytes ?? ByteBuffer())) }
            if let last = items.last, last.id.column == id {
                if let file { items[items.count - 1].files.append(file) }
                continue
            }
            guard let ownerID = UserID(storageKey: owner), let itemKind = OutboxItem.Kind(rawValue: kind) else {
                throw StoreError.invalidRow("outbox item")
            }
            items.append(
                OutboxItem(
                    id: Snowflake(column: id), owner: ownerID, kind: itemKind, content: content, files: file.map { [$0] } ?? [],
                    idempotencyKey: key, suggestionID: suggestion, acceptedAt: Date(timeIntervalSince1970: accepted), attempts: attempts,
                    nextAttempt: Date(timeIntervalSince1970: next), postedParts: OutboxColumns.parts(parts),
                    failure: OutboxColumns.failure(failure), mayStartThread: mayStart, traceparent: trace))
        }
        return items
    }

    public func outbox(of owner: UserID) async throws -> [OutboxItem] {
        try Self.items(try await query("\(unescaped: Self.itemWithFiles) WHERE i.owner = \(owner.rawValue) ORDER BY i.id, f.position"))
    }

    public func outboxItem(_ id: Snowflake) async throws -> OutboxItem? {
        try Self.items(try await query("\(unescaped: Self.itemWithFiles) WHERE i.id = \(id.column) ORDER BY f.position")).first
    }

    public func updateOutboxItem(_ item: OutboxItem, fence: OutboxFence?) async throws -> Bool {
        try await !query(
            """
            UPDATE outbox_items SET content = \(item.content), suggestion_id = \(item.suggestionID), attempts = \(item.attempts),
                next_attempt_at = \(item.nextAttempt.timeIntervalSince1970), posted_parts = \(OutboxColumns.parts(item.postedParts)),
                failure = \(OutboxColumns.failure(item.failure)),
                size = \(Int64(item.content.utf8.count)) + (SELECT coalesce(sum(length(bytes)), 0) FROM outbox_files WHERE item_id = \(item.id.column))
            WHERE id = \(item.id.column) AND (\(fence?.holder)::TEXT IS NULL OR EXISTS (
                SELECT 1 FROM outbox_holds o WHERE o.owner = outbox_items.owner AND o.holder = \(fence?.holder)
                AND o.until > \(fence?.now.timeIntervalSince1970)))
            RETURNING id
            """
        ).isEmpty
    }

    public func removeOutboxItem(_ id: Snowflake, fence: OutboxFence?) async throws -> Bool {
        try await !query(
            """
            WITH removed AS (
                DELETE FROM outbox_items WHERE id = \(id.column) AND (\(fence?.holder)::TEXT IS NULL OR EXISTS (
                    SELECT 1 FROM outbox_holds o WHERE o.owner = outbox_items.owner AND o.holder = \(fence?.holder)
                    AND o.until > \(fence?.now.timeIntervalSince1970)))
                RETURNING id),
            files AS (DELETE FROM outbox_files WHERE item_id IN (SELECT id FROM removed))
            SELECT id FROM removed
            """
        ).isEmpty
    }

    /// Each user's first waiting item.
    private static let heads = """
        SELECT DISTINCT ON (owner) owner, id, next_attempt_at FROM outbox_items WHERE failure IS NULL ORDER BY owner, id
        """

    public func outboxOwnersDue(at now: Date, limit: Int) async throws -> [UserID] {
        let time = now.timeIntervalSince1970
        return try await query(
            """
            SELECT h.owner FROM (\(unescaped: Self.heads)) h
            WHERE h.next_attempt_at <= \(time) AND NOT EXISTS (SELECT 1 FROM outbox_holds o WHERE o.owner = h.owner AND o.until > \(time))
            ORDER BY h.id LIMIT \(max(0, limit))
            """
        ).compactMap { UserID(storageKey: try $0.decode(String.self)) }
    }

    public func nextOutboxDue() async throws -> Date? {
        try await query(
            """
            SELECT min(GREATEST(h.next_attempt_at, coalesce(o.until, 0))) FROM (\(unescaped: Self.heads)) h
            LEFT JOIN outbox_holds o ON o.owner = h.owner
            """
        ).first
            .flatMap { try $0.decode(Double?.self) }.map(Date.init(timeIntervalSince1970:))
    }

    public func claimOutbox(of owner: UserID, holder: String, until: Date, now: Date) async throws -> Bool {
        try await !query(
            """
            INSERT INTO outbox_holds (owner, holder, until) VALUES (\(owner.rawValue), \(holder), \(until.timeIntervalSince1970))
            ON CONFLICT (owner) DO UPDATE SET holder = excluded.holder, until = excluded.until
            WHERE outbox_holds.holder = excluded.holder OR outbox_holds.until <= \(now.timeIntervalSince1970)
            RETURNING owner
            """
        ).isEmpty
    }

    public func releaseOutbox(of owner: UserID, holder: String) async throws {
        try await query("DELETE FROM outbox_holds WHERE owner = \(owner.rawValue) AND holder = \(holder)")
    }

    public func retryWaitingOutbox(at now: Date) async throws -> Int {
        let moment = now.timeIntervalSince1970
        return try await query(
            """
            UPDATE outbox_items SET next_attempt_at = \(moment)
            WHERE failure IS NULL AND attempts > 0 AND next_attempt_at > \(moment) RETURNING id
            """
        ).count
    }

    public func releaseOutboxHolds(except holder: String) async throws {
        try await query("DELETE FROM outbox_holds WHERE holder <> \(holder)")
    }

    public func outboxUsage(of owner: UserID?) async throws -> OutboxUsage {
        let rows = try await query(
            """
            SELECT count(*), coalesce(sum(size), 0)::BIGINT, min(CASE WHEN failure IS NULL THEN accepted_at END), count(failure),
                coalesce(sum(CASE WHEN failure IS NOT NULL THEN size END), 0)::BIGINT
            FROM outbox_items WHERE \(owner?.rawValue)::TEXT IS NULL OR owner = \(owner?.rawValue)
            """)
        guard let row = rows.first else { return OutboxUsage() }
        let (count, bytes, oldest, failed, failedBytes) = try row.decode((Int, Int, Double?, Int, Int).self)
        return OutboxUsage(count: count, bytes: bytes, oldest: oldest.map(Date.init(timeIntervalSince1970:)), failed: failed, failedBytes: failedBytes)
    }

    public func failedOutboxFiles(of owner: UserID?, failedBefore: Date?, limit: Int) async throws -> [FailedOutboxFiles] {
        let before = failedBefore?.timeIntervalSince1970
        return try await query(
            """
            SELECT i.id, i.owner, sum(length(f.bytes))::BIGINT FROM outbox_items i JOIN outbox_files f ON f.item_id = i.id
            WHERE i.failure IS NOT NULL AND (\(owner?.rawValue)::TEXT IS NULL OR i.owner = \(owner?.rawValue))
                AND (\(before)::DOUBLE PRECISION IS NULL OR i.next_attempt_at < \(before))
            GROUP BY i.id, i.owner ORDER BY i.id LIMIT \(max(0, limit))
            """
        ).compactMap { row in
            let (id, owner, bytes) = try row.decode((Int64, String, Int).self)
            return UserID(storageKey: owner).map { FailedOutboxFiles(id: Snowflake(column: id), owner: $0, bytes: bytes) }
        }
    }

    public func dropFailedOutboxFiles(_ id: Snowflake) async throws -> Bool {
        try await !query(
            """
            WITH dropped AS (
                DELETE FROM outbox_files WHERE item_id = \(id.column)
                AND EXISTS (SELECT 1 FROM outbox_items WHERE id = \(id.column) AND failure IS NOT NULL) RETURNING item_id),
            kept AS (UPDATE outbox_items SET size = octet_length(content) WHERE id IN (SELECT item_id FROM dropped) RETURNING id)
            SELECT id FROM kept
            """
        ).isEmpty
    }
}
