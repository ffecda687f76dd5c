import Foundation
import GRDB
import Logging
import ThreadDeskCore

/// The embedded default: one SQLite file in WAL mode, with the per-user FIFO lock in process.
/// Only one process may serve from a file; several replicas need PostgreSQL.
public final class SQLiteStore: UserStore {
    let pool: DatabasePool
    let jobs = ExclusiveJobs()
    private let lock = KeyedFIFOLock<UserID>(name: \.logValue)
    /// One process serves from this store, so its quotas live in its memory.
    private let buckets = TokenBuckets()

    /// Opens (creating folders and file as needed) and migrates the database at `path`.
    public init(path: String, logger: Logger = Logger(label: "threaddesk.store")) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        logger.debug("SQLite store ready", metadata: ["path": "\(path)"])
    }

    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await lock.withLock(id) {
            let (record, stored) = try read { db in
                (try UserRow.fetchOne(db, key: id.rawValue)?.record,
                 try idempotencyKey.flatMap { try ResponseRow.fetchOne(db, key: ["user_id": id.rawValue, "key": $0])?.response })
            }
            var context = UserContext(id: id, record: record, storedResponse: stored)
            let result: Result<T, any Error>
            do {
                result = .success(try await body(&context))
            } catch {
                result = .failure(error)
            }
            try await save(context, previous: record, idempotencyKey: idempotencyKey)
            return try result.get()
        }
    }

    private func save(_ context: UserContext, previous: UserRecord?, idempotencyKey: String?) async throws {
        let changed = context.record != nil && context.record != previous
        let response = idempotencyKey.flatMap { key in context.response.map { (key, $0) } }
        guard changed || response != nil else { return }
        // Not cancellable: whatever the body did in Discord must be remembered even if the
        // request that caused it went away.
        let record = changed ? context.record : nil
        let id = context.id.rawValue
        try await write { db in
            if let record { try UserRow(record).save(db) }
            if let (key, response) = response {
                try ResponseRow(userID: id, key: key, response: response, createdAt: Date()).save(db)
            }
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
                .flatMap { UserID($0) }
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

    public func checkReachable() async throws {
        _ = try read { try Int.fetchOne($0, sql: "SELECT 1") }
    }

    /// Idempotency records older than `age` are of no use to a retrying client.
    public func pruneResponses(before date: Date) async throws -> Int {
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
        return migrator
    }

    /// Reads on the caller's thread. The store's reads are single indexed lookups of a few
    /// microseconds; handing each to a dispatch queue and back cost more than the query (a poll
    /// makes four), and capped polls at about 2,000/s on two cores.
    /// A user row by one of its columns, through a cached statement.
    static func userRow(_ db: Database, _ column: String, _ value: String) throws -> UserRow? {
        try UserRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM users WHERE \(column) = ?"), arguments: [value])
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

struct UserRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "users"
    var id: String
    var token_hash: String?
    var thread_id: String?
    var push_token: String?
    var push_environment: String?
    var installation: String?
    var pending_installation: String?
    var pending_post: String?
    var last_notified_message_id: String?
    var last_read_message_id: String?
    var recent_notified_ids: String?
    var unread_count: Int
    var created_at: Date
    var updated_at: Date
    var live_state: String?
    var earlier_token_hashes: String?
    var history: Int

    /// By position, in the order the migrations made the columns (v1's, v3's `live_state`, v4's
    /// `earlier_token_hashes`, v5's `history`):
    /// Codable decoding of a row cost more than the query on every authenticated request.
    init(row: Row) {
        (id, token_hash, thread_id, push_token, push_environment) = (row[0], row[1], row[2], row[3], row[4])
        (installation, pending_installation, pending_post) = (row[5], row[6], row[7])
        (last_notified_message_id, last_read_message_id, recent_notified_ids) = (row[8], row[9], row[10])
        (unread_count, created_at, updated_at) = (row[11], row[12], row[13])
        live_state = row[14]
        earlier_token_hashes = row[15]
        history = row[16]
    }

    init(_ record: UserRecord) {
        id = record.id.rawValue
        token_hash = record.tokenHash
        thread_id = record.threadID
        push_token = record.pushToken
        push_environment = record.pushEnvironment?.rawValue
        installation = RecordJSON.encode(record.installation)
        pending_installation = RecordJSON.encode(record.pendingInstallation)
        pending_post = RecordJSON.encode(record.pendingPosts)
        last_notified_message_id = record.lastNotifiedMessageID
        last_read_message_id = record.lastReadMessageID
        recent_notified_ids = RecordJSON.encode(record.recentNotifiedIDs)
        unread_count = record.unreadCount
        created_at = record.createdAt
        updated_at = record.updatedAt
        live_state = record.live.isEmpty ? nil : RecordJSON.encode(record.live)
        earlier_token_hashes = record.earlierTokenHashes.isEmpty ? nil : RecordJSON.encode(record.earlierTokenHashes)
        history = record.history.rawValue
    }

    var record: UserRecord {
        get throws {
            guard let userID = UserID(id) else { throw DatabaseError(message: "invalid user id in the users table") }
            return decoded(userID)
        }
    }

    private func decoded(_ userID: UserID) -> UserRecord {
        var record = UserRecord(id: userID, now: created_at)
        record.tokenHash = token_hash
        record.earlierTokenHashes = RecordJSON.decode(earlier_token_hashes) ?? []
        record.threadID = thread_id
        record.pushToken = push_token
        record.pushEnvironment = push_environment.flatMap(PushEnvironment.init(rawValue:))
        record.installation = RecordJSON.decode(installation)
        record.pendingInstallation = RecordJSON.decode(pending_installation)
        record.pendingPosts = RecordJSON.decode(pending_post) ?? []
        record.lastNotifiedMessageID = last_notified_message_id
        record.lastReadMessageID = last_read_message_id
        record.recentNotifiedIDs = RecordJSON.decode(recent_notified_ids) ?? []
        record.unreadCount = unread_count
        record.updatedAt = updated_at
        record.live = RecordJSON.decode(live_state) ?? LiveState()
        record.history.formUnion(UserHistory(rawValue: history))
        return record
    }
}

/// Small nested values of a record (device info, pending post, pushed ids) live in JSON text columns.
enum RecordJSON {
    static func encode<T: Encodable>(_ value: T?) -> String? {
        value.flatMap { try? String(decoding: JSONEncoder.sorted.encode($0), as: UTF8.self) }
    }

    static func decode<T: Decodable>(_ text: String?) -> T? {
        guard let text, !text.isEmpty else { return nil }
        // Empty lists are the common case on every read of a user or a message: no decoder for them.
        if text == "[]", let empty = [Never]() as? T { return empty }
        return try? decoder.decode(T.self, from: Data(text.utf8))
    }

    private static let decoder = JSONDecoder()
}

private struct ResponseRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "idempotency"
    var user_id: String
    var key: String
    var fingerprint: String
    var status: Int
    var body: Data
    var created_at: Date

    init(userID: String, key: String, response: StoredResponse, createdAt: Date) {
        user_id = userID
        self.key = key
        fingerprint = response.fingerprint
        status = response.status
        body = response.body
        created_at = createdAt
    }

    var response: StoredResponse { StoredResponse(status: status, body: body, fingerprint: fingerprint) }
}

extension JSONEncoder {
    static let sorted: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}
