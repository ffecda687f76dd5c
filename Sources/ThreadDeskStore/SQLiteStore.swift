import Foundation
import GRDB
import Logging
import ThreadDeskCore

/// The embedded default: one SQLite file in WAL mode, with the per-user FIFO lock in process.
/// Only one process may serve from a file; several replicas need PostgreSQL.
public final class SQLiteStore: UserStore {
    let pool: DatabasePool
    let jobs = ExclusiveJobs()
    let lock: KeyedFIFOLock<UserID>
    /// One process serves from this store, so its quotas live in its memory.
    let buckets = TokenBuckets()
    let turnWindows = TurnWindows()

    /// Opens (creating folders and file as needed) and migrates the database at `path`.
    /// - Parameter lockWait: how long a request waits for a user's lock at most.
    public init(path: String, logger: Logger = Logger(label: "threaddesk.store"), lockWait: Duration = UserLockWait.standard) throws {
        lock = UserLockWait.lock(wait: lockWait)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // A database migrated by a newer ThreadDesk is left as it is: this version would not keep
        // what the newer one wrote, or could break it.
        // (On the writer's connection, as the migration: a reader's would keep the old schema.)
        let unknown = try pool.writeWithoutTransaction { db in
            try Self.migrator.appliedIdentifiers(db).subtracting(Self.migrator.migrations)
        }
        if !unknown.isEmpty { throw SchemaTooNew(path: path, unknownMigrations: unknown.sorted()) }
        try Self.migrator.migrate(pool)
        logger.debug("SQLite store ready", metadata: ["path": "\(path)"])
    }

    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await lock.withLock(id) {
            // Whether the user was there when read: another process (`admin user delete`) may
            // erase them meanwhile, and what this request changed must not bring them back.
            var existed = false
            return try await UserTransaction.run(
                id, idempotencyKey: idempotencyKey,
                read: {
                    let found = try read { db in
                        (try Self.userRow(db, "id", id.rawValue)?.record,
                         try idempotencyKey.flatMap { try ResultRow.fetchOne(db, key: ["user_id": id.rawValue, "key": $0])?.result })
                    }
                    existed = found.0 != nil
                    return found
                },
                // Not cancellable (see `write`): what the body did in Discord must be remembered.
                save: { changed, result, accepted in
                    let wasThere = existed
                    try await write { db in
                        // Erased since it was read (by another process: `admin user delete`):
                        // nothing of it is written back, no result and no accepted message either.
                        if wasThere, try Self.userRow(db, "id", id.rawValue) == nil { return }
                        if let changed {
                            if wasThere {
                                // Erased since it was read: nothing of it is written back.
                                do {
                                    try UserColumns(changed).update(db)
                                } catch RecordError.recordNotFound {
                                    return
                                }
                            } else {
                                try UserColumns(changed).save(db)
                            }
                        }
                        if let (key, result) = result { try ResultRow(userID: id.rawValue, key: key, result: result).save(db) }
                        try Self.enqueue(accepted.items, db)
                        try Self.saveMirrored(accepted.mirrored, db)
                        try Self.enqueueWebhooks(accepted.webhooks, db)
                    }
                },
                body: body)
        }
    }

    public func user(_ id: UserID) async throws -> UserRecord? {
        try read { try Self.userRow($0, "id", id.rawValue)?.record }
    }

    public func user(forTokenHash hash: String) async throws -> UserRecord? {
        try read { try Self.userRow($0, "token_hash", hash)?.record }
    }

    public func userID(forThread threadID: String) async throws -> UserID? {
        try read { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT id FROM users WHERE thread_id = ? LIMIT 1"), arguments: [threadID])
                .flatMap { UserID(storageKey: $0) }
        }
    }

    public func globalValue(_ key: String) async throws -> String? {
        try read { try String.fetchOne($0.cachedStatement(sql: "SELECT value FROM global_values WHERE key = ?"), arguments: [key]) }
    }

    public func setGlobalValue(_ key: String, to value: String?) async throws {
        try await pool.write { db in
            if let value {
                try db.execute(
                    sql: "INSERT INTO global_values (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM global_values WHERE key = ?", arguments: [key])
            }
        }
    }

    public func takeToken(_ key: String, limit: QuotaLimit, cost: Double) async throws -> Duration? {
        buckets.take(key, limit: limit, cost: cost)
    }

    public func returnToken(_ key: String, limit: QuotaLimit, cost: Double) async throws {
        buckets.giveBack(key, limit: limit, cost: cost)
    }

    public func takeWindowTurn(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration? {
        turnWindows.take(key, limit: limit, window: window, lateness: lateness)
    }

    public func checkReachable() async throws {
        _ = try read { try Int.fetchOne($0, sql: "SELECT 1") }
    }

    /// The database was migrated by a newer version of ThreadDesk.
    public struct SchemaTooNew: Error, CustomStringConvertible {
        public let path: String
        public let unknownMigrations: [String]

        public var description: String {
            "\(path) was migrated by a newer ThreadDesk (\(unknownMigrations.joined(separator: ", "))); run that version, or restore a backup"
        }
    }

    /// The migrations this version knows, oldest first, and whether each is applied.
    public func migrations() throws -> [(name: String, applied: Bool)] {
        let applied = try pool.read { try Self.migrator.appliedIdentifiers($0) }
        return Self.migrator.migrations.map { ($0, applied.contains($0)) }
    }

    /// A consistent copy of the live database in a new file at `path`: SQLite's online backup,
    /// read from one snapshot while the server goes on writing (WAL). The copy is an ordinary
    /// database file; serve from it by pointing `STORE_URL` at it.
    public func backup(to path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { throw BackupTargetExists(path: path) }
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        let copy = try DatabaseQueue(path: path)
        try pool.backup(to: copy)
        try copy.close()
    }

    public struct BackupTargetExists: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "\(path) exists already; a backup never overwrites a file" }
    }

    public func migrate() async throws {
        // Done when the file was opened: a SQLite store has one process and migrates at once.
    }

    /// Idempotency records older than `age` are of no use to a retrying client.
    public func pruneResults(before date: Date) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM idempotency WHERE created_at < ?", arguments: [date])
            return db.changesCount
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: users, idempotency, global values") { db in
            try db.create(table: "users") { t in
                t.primaryKey("id", .text)
                t.column("token_hash", .text).unique()
                t.column("thread_id", .text).indexed()
                t.column("push_token", .text)
                t.column("push_environment", .text)
                t.column("installation", .text)
                t.column("pending_installation", .text)
                t.column("pending_post", .text)
                t.column("last_notified_message_id", .text)
                t.column("last_read_message_id", .text)
                t.column("recent_notified_ids", .text)
                t.column("unread_count", .integer).notNull().defaults(to: 0)
                t.column("created_at", .datetime).notNull()
                t.column("updated_at", .datetime).notNull()
            }
            try db.create(table: "idempotency") { t in
                t.column("user_id", .text).notNull()
                t.column("key", .text).notNull()
                t.column("fingerprint", .text).notNull()
                t.column("status", .integer).notNull()
                t.column("body", .blob).notNull()
                t.column("created_at", .datetime).notNull().indexed()
                t.primaryKey(["user_id", "key"])
            }
            try db.create(table: "global_values") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
        }
        migrateMirror(&migrator)
        migrator.registerMigration("v4: several live tokens per user") { db in
            try db.execute(sql: "ALTER TABLE users ADD COLUMN earlier_token_hashes TEXT")
        }
        migrator.registerMigration("v5: what an id has been") { db in
            try db.execute(sql: "ALTER TABLE users ADD COLUMN history INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: UserHistory.backfill)
        }
        migrateAttestations(&migrator)
        migrator.registerMigration("v9: when each token was last used") { db in
            // Tokens issued before have no note: each counts from its first use after.
            try db.execute(sql: "ALTER TABLE users ADD COLUMN token_used_at TEXT")
        }
        migrateOutbox(&migrator)
        migrator.registerMigration("v11: messages delivered from the outbox") { db in
            try db.execute(
                sql: """
                    ALTER TABLE mirror_messages ADD COLUMN delivery TEXT NOT NULL DEFAULT 'sent';
                    ALTER TABLE mirror_messages ADD COLUMN delivery_error TEXT;
                    CREATE TABLE mirror_aliases (discord_id INTEGER PRIMARY KEY, message_id INTEGER NOT NULL, owner TEXT NOT NULL);
                    CREATE INDEX mirror_aliases_message ON mirror_aliases (message_id);
                    CREATE INDEX mirror_aliases_owner ON mirror_aliases (owner);
                    ALTER TABLE users ADD COLUMN pending_thread TEXT;
                    ALTER TABLE outbox_items ADD COLUMN may_start_thread INTEGER NOT NULL DEFAULT 1;
                    """)
        }
        migrator.registerMigration("v12: the trace of an accepted message") { db in
            try db.execute(sql: "ALTER TABLE outbox_items ADD COLUMN trace_parent TEXT")
        }
        migrateAssist(&migrator)
        migrateCrashes(&migrator)
        migrateConversations(&migrator)
        migrateWebhooks(&migrator)
        migrateProfiles(&migrator)
        return migrator
    }

    /// Reads on the caller's thread. The store's reads are single indexed lookups of a few
    /// microseconds; handing each to a dispatch queue and back cost more than the query (a poll
    /// makes four), and capped polls at about 2,000/s on two cores.
    /// A user row by one of its columns, through a cached statement.
    static func userRow(_ db: Database, _ column: String, _ value: String) throws -> UserColumns? {
        try UserColumns.fetchOne(db.cachedStatement(sql: "SELECT * FROM users WHERE \(column) = ?"), arguments: [value])
    }

    /// Single statements only: they need no transaction around them to see one state.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.unsafeReentrantRead(body)
    }

    /// A write that finishes even if the caller is cancelled: what the body did in Discord must
    /// be remembered even if the request that caused it went away. GRDB's completion-handler
    /// write does not look at the caller's cancellation, so no task of its own is needed.
    func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            pool.asyncWrite(updates) { _, result in continuation.resume(with: result) }
        }
    }
}

extension UserColumns: FetchableRecord, PersistableRecord {
    static let databaseTableName = "users"

    /// By position, in the order of the table's columns: Codable decoding of a row cost more
    /// than the query on every authenticated request. The columns added by later migrations by
    /// name: where they stand depends on the order a database took them in.
    init(row: Row) {
        self.init(
            id: row[0], token_hash: row[1], thread_id: row[2], push_token: row[3], push_environment: row[4], installation: row[5],
            pending_installation: row[6], pending_post: row[7], last_notified_message_id: row[8], last_read_message_id: row[9],
            recent_notified_ids: row[10], unread_count: row[11], created_at: row[12], updated_at: row[13], live_state: row[14],
            earlier_token_hashes: row[15], history: row["history"], token_used_at: row["token_used_at"],
            pending_thread: row["pending_thread"])
    }
}

/// What a request under an idempotency key did (`body`); rows written before results were kept
/// hold the answer itself there. `status` is what earlier versions read with it.
private struct ResultRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "idempotency"
    var user_id: String
    var key: String
    var fingerprint: String
    var status: Int
    var body: Data
    var created_at: Date

    init(userID: String, key: String, result: IdempotentResult) {
        (user_id, self.key, fingerprint, status, body, created_at) = (userID, key, result.fingerprint, IdempotentResult.storedStatus, result.encoded, Date())
    }

    var result: IdempotentResult? { IdempotentResult(stored: body, fingerprint: fingerprint) }
}
