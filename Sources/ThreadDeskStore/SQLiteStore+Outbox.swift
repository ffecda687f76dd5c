import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateOutbox(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10: outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE outbox_items (
                        id INTEGER PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL,
                        idempotency_key TEXT NOT NULL, suggestion_id TEXT, accepted_at DOUBLE NOT NULL, attempts INTEGER NOT NULL,
                        next_attempt_at DOUBLE NOT NULL, posted_parts TEXT NOT NULL, failure TEXT, size INTEGER NOT NULL);
                    CREATE INDEX outbox_items_owner ON outbox_items (owner, id);
                    CREATE INDEX outbox_items_waiting ON outbox_items (owner, id) WHERE failure IS NULL;
                    CREATE TABLE outbox_files (
                        item_id INTEGER NOT NULL, position INTEGER NOT NULL, filename TEXT NOT NULL, content_type TEXT,
                        bytes BLOB NOT NULL, PRIMARY KEY (item_id, position));
                    CREATE TABLE outbox_holds (owner TEXT PRIMARY KEY, holder TEXT NOT NULL, until DOUBLE NOT NULL);
                    """)
        }
    }

    /// Adds accepted messages, in the transaction `db` is in (the one that accepts them).
    static func enqueue(_ items: [OutboxItem], _ db: Database) throws {
        for item in items {
            try db.execute(
                sql: """
                    INSERT INTO outbox_items (id, owner, kind, content, idempotency_key, suggestion_id, accepted_at, attempts,
                        next_attempt_at, posted_parts, failure, size, may_start_thread, trace_parent)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
                    """,
                arguments: [
                    item.id.column, item.owner.rawValue, item.kind.rawValue, item.content, item.idempotencyKey, item.suggestionID,
                    item.acceptedAt.timeIntervalSince1970, item.attempts, item.nextAttempt.timeIntervalSince1970,
                    OutboxColumns.parts(item.postedParts), OutboxColumns.failure(item.failure), item.size, item.mayStartThread,
                    item.traceparent,
                ])
            guard db.changesCount > 0 else {
                // Kept already: the same message (a commit retried) is no error; another's is.
                let kept = try Row.fetchOne(db, sql: "SELECT owner, idempotency_key FROM outbox_items WHERE id = ?", arguments: [item.id.column])
                guard kept?[0] == item.owner.rawValue, kept?[1] == item.idempotencyKey else { throw OutboxIDTaken(id: item.id) }
                continue
            }
            for (position, file) in item.files.enumerated() {
                try db.execute(
                    sql: "INSERT INTO outbox_files (item_id, position, filename, content_type, bytes) VALUES (?, ?, ?, ?, ?)",
                    arguments: [item.id.column, position, file.filename, file.contentType, file.bytes])
            }
        }
    }

    static let outboxColumns =
        "id, owner, kind, content, idempotency_key, suggestion_id, accepted_at, attempts, next_attempt_at, posted_parts, failure, may_start_thread, trace_parent"

    private static func item(_ row: Row, files: [OutboxItem.File]) -> OutboxItem? {
        guard let owner = UserID(storageKey: row[1] as String), let kind = OutboxItem.Kind(rawValue: row[2]) else { return nil }
        return OutboxItem(
            id: Snowflake(column: row[0]), owner: owner, kind: kind, content: row[3], files: files, idempotencyKey: row[4],
            suggestionID: row[5], acceptedAt: Date(timeIntervalSince1970: row[6]), attempts: row[7],
            nextAttempt: Date(timeIntervalSince1970: row[8]), postedParts: OutboxColumns.parts(row[9] as String),
            failure: OutboxColumns.failure(row[10] as String?), mayStartThread: row[11], traceparent: row[12])
    }

    private static func files(_ db: Database, of ids: [Int64]) throws -> [Int64: [OutboxItem.File]] {
        guard !ids.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: ids.count).joined(separator: ",")
        var files: [Int64: [OutboxItem.File]] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT item_id, filename, content_type, bytes FROM outbox_files WHERE item_id IN (\(marks)) ORDER BY item_id, position",
            arguments: StatementArguments(ids))
        {
            files[row[0], default: []].append(OutboxItem.File(filename: row[1], contentType: row[2], bytes: row[3]))
        }
        return files
    }

    public func outbox(of owner: UserID) async throws -> [OutboxItem] {
        // Items and their files from one snapshot: a delivery that ends meanwhile takes both.
        try snapshot { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(Self.outboxColumns) FROM outbox_items WHERE owner = ? ORDER BY id", arguments: [owner.rawValue])
            let files = try Self.files(db, of: rows.map { $0[0] as Int64 })
            return rows.compactMap { Self.item($0, files: files[$0[0] as Int64] ?? []) }
        }
    }

    public func outboxItem(_ id: Snowflake) async throws -> OutboxItem? {
        try snapshot { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT \(Self.outboxColumns) FROM outbox_items WHERE id = ?", arguments: [id.column])
            else { return nil }
            return Self.item(row, files: try Self.files(db, of: [id.column])[id.column] ?? [])
        }
    }

    /// Several statements in one read transaction (one snapshot of the WAL), on the caller's
    /// thread as every read of this store: GRDB's cancellable async read lost its reader when a
    /// delivery was cancelled at shutdown, and the store's next reads then waited for good.
    private func snapshot<T>(_ body: (Database) throws -> T) throws -> T {
        try read { db in
            var result: Result<T, any Error> = .failure(CancellationError())
            try db.inTransaction(.deferred) {
                result = Result { try body(db) }
                return .commit
            }
            return try result.get()
        }
    }

    /// The condition a fenced write adds: the holder's hold on the row's owner has not run out.
    private static let fenced = """
        (? IS NULL OR EXISTS (SELECT 1 FROM outbox_holds o WHERE o.owner = outbox_items.owner AND o.holder = ? AND o.until > ?))
        """

    public func updateOutboxItem(_ item: OutboxItem, fence: OutboxFence?) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE outbox_items SET content = ?, suggestion_id = ?, attempts = ?, next_attempt_at = ?, posted_parts = ?, failure = ?,
                        size = ? + (SELECT coalesce(sum(length(bytes)), 0) FROM outbox_files WHERE item_id = ?)
                    WHERE id = ? AND \(Self.fenced)
                    """,
                arguments: [
                    item.content, item.suggestionID, item.attempts, item.nextAttempt.timeIntervalSince1970, OutboxColumns.parts(item.postedParts),
                    OutboxColumns.failure(item.failure), item.content.utf8.count, item.id.column, item.id.column,
                    fence?.holder, fence?.holder, fence?.now.timeIntervalSince1970,
                ])
            return db.changesCount > 0
        }
    }

    public func removeOutboxItem(_ id: Snowflake, fence: OutboxFence?) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM outbox_items WHERE id = ? AND \(Self.fenced)",
                arguments: [id.column, fence?.holder, fence?.holder, fence?.now.timeIntervalSince1970])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM outbox_files WHERE item_id = ?", arguments: [id.column])
            return true
        }
    }

    /// Each user's first waiting item (`waiting` the rows of waiting items).
    static let outboxHeads = """
        SELECT i.owner, i.id, i.next_attempt_at FROM outbox_items i
        WHERE i.failure IS NULL AND i.id = (SELECT min(j.id) FROM outbox_items j WHERE j.owner = i.owner AND j.failure IS NULL)
        """

    public func outboxOwnersDue(at now: Date, limit: Int) async throws -> [UserID] {
        try read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT owner FROM (\(Self.outboxHeads)) h
                    WHERE h.next_attempt_at <= ? AND NOT EXISTS (SELECT 1 FROM outbox_holds o WHERE o.owner = h.owner AND o.until > ?)
                    ORDER BY h.id LIMIT ?
                    """, arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970, max(0, limit)]
            ).compactMap { UserID(storageKey: $0) }
        }
    }

    public func nextOutboxDue() async throws -> Date? {
        try read { db in
            try Double.fetchOne(
                db,
                sql: """
                    SELECT min(max(h.next_attempt_at, coalesce(o.until, 0))) FROM (\(Self.outboxHeads)) h
                    LEFT JOIN outbox_holds o ON o.owner = h.owner
                    """
            ).map(Date.init(timeIntervalSince1970:))
        }
    }

    public func claimOutbox(of owner: UserID, holder: String, until: Date, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox_holds (owner, holder, until) VALUES (?, ?, ?)
                    ON CONFLICT (owner) DO UPDATE SET holder = excluded.holder, until = excluded.until
                    WHERE outbox_holds.holder = excluded.holder OR outbox_holds.until <= ?
                    """, arguments: [owner.rawValue, holder, until.timeIntervalSince1970, now.timeIntervalSince1970])
            return db.changesCount > 0
        }
    }

    public func releaseOutbox(of owner: UserID, holder: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM outbox_holds WHERE owner = ? AND holder = ?", arguments: [owner.rawValue, holder])
        }
    }

    public func retryWaitingOutbox(at now: Date) async throws -> Int {
        let moment = now.timeIntervalSince1970
        return try await write { db in
            try db.execute(
                sql: "UPDATE outbox_items SET next_attempt_at = ? WHERE failure IS NULL AND attempts > 0 AND next_attempt_at > ?",
                arguments: [moment, moment])
            return db.changesCount
        }
    }

    public func releaseOutboxHolds(except holder: String) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM outbox_holds WHERE holder <> ?", arguments: [holder]) }
    }

    public func outboxUsage(of owner: UserID?) async throws -> OutboxUsage {
        try read { try Self.outboxUsage($0, of: owner) }
    }

    static func outboxUsage(_ db: Database, of owner: UserID?) throws -> OutboxUsage {
        let row = try Row.fetchOne(
            db,
            sql: """
                SELECT count(*), coalesce(sum(size), 0), min(CASE WHEN failure IS NULL THEN accepted_at END), count(failure),
                    coalesce(sum(CASE WHEN failure IS NOT NULL THEN size END), 0)
                FROM outbox_items WHERE ? IS NULL OR owner = ?
                """,
            arguments: [owner?.rawValue, owner?.rawValue])
        guard let row else { return OutboxUsage() }
        return OutboxUsage(
            count: row[0], bytes: row[1], oldest: (row[2] as Double?).map(Date.init(timeIntervalSince1970:)), failed: row[3], failedBytes: row[4])
    }

    public func failedOutboxFiles(of owner: UserID?, failedBefore: Date?, limit: Int) async throws -> [FailedOutboxFiles] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT i.id, i.owner, sum(length(f.bytes)) FROM outbox_items i JOIN outbox_files f ON f.item_id = i.id
                    WHERE i.failure IS NOT NULL AND (? IS NULL OR i.owner = ?) AND (? IS NULL OR i.next_attempt_at < ?)
                    GROUP BY i.id, i.owner ORDER BY i.id LIMIT ?
                    """,
                arguments: [owner?.rawValue, owner?.rawValue, failedBefore?.timeIntervalSince1970, failedBefore?.timeIntervalSince1970, max(0, limit)]
            ).compactMap { row in
                UserID(storageKey: row[1] as String).map { FailedOutboxFiles(id: Snowflake(column: row[0]), owner: $0, bytes: row[2]) }
            }
        }
    }

    public func dropFailedOutboxFiles(_ id: Snowflake) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    DELETE FROM outbox_files WHERE item_id = ?
                    AND EXISTS (SELECT 1 FROM outbox_items WHERE id = ? AND failure IS NOT NULL)
                    """, arguments: [id.column, id.column])
            guard db.changesCount > 0 else { return false }
            // What it keeps now is its text (bytes, not characters).
            try db.execute(sql: "UPDATE outbox_items SET size = length(CAST(content AS BLOB)) WHERE id = ?", arguments: [id.column])
            return true
        }
    }
}

/// The outbox's JSON text columns, as both SQL stores write them.
enum OutboxColumns {
    static func parts(_ ids: [Snowflake]) -> String { RecordJSON.encode(ids.map(\.description)) ?? "[]" }

    static func parts(_ text: String) -> [Snowflake] { (RecordJSON.decode(text) as [String]?)?.compactMap { Snowflake($0) } ?? [] }

    static func failure(_ failure: DeliveryFailure?) -> String? { failure.flatMap { RecordJSON.encode($0) } }

    static func failure(_ text: String?) -> DeliveryFailure? { RecordJSON.decode(text) }
}
