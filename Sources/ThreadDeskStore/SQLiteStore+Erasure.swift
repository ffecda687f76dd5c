import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    public func eraseUser(_ id: UserID, _ prepare: (inout ErasureContext) async throws -> Void) async throws -> Bool {
        try await lock.withLock(id) {
            let (record, threads) = try read { db in
                (try Self.userRow(db, "id", id.rawValue)?.record,
                 try Row.fetchAll(db, sql: "SELECT * FROM mirror_threads WHERE owner = ? ORDER BY id", arguments: [id.rawValue]).map(Self.thread))
            }
            var context = ErasureContext(id: id, record: record, threads: threads)
            try await prepare(&context)
            let erasure = context
            try await write { db in try Self.erase(erasure, db) }
            buckets.forget(keys: erasure.quotaKeys)
            return record != nil || !threads.isEmpty
        }
    }

    /// Every row of the user's, in the write transaction `db` is in.
    private static func erase(_ erasure: ErasureContext, _ db: Database) throws {
        let threads = erasure.threadIDs.map(\.column)
        if !threads.isEmpty {
            let marks = Array(repeating: "?", count: threads.count).joined(separator: ",")
            try db.execute(sql: "DELETE FROM mirror_messages WHERE thread_id IN (\(marks))", arguments: StatementArguments(threads))
            try db.execute(sql: "DELETE FROM mirror_threads WHERE id IN (\(marks))", arguments: StatementArguments(threads))
        }
        try db.execute(sql: "DELETE FROM mirror_threads WHERE owner = ?", arguments: [erasure.id.rawValue])
        try db.execute(sql: "DELETE FROM mirror_aliases WHERE owner = ?", arguments: [erasure.id.rawValue])
        try db.execute(sql: "DELETE FROM idempotency WHERE user_id = ?", arguments: [erasure.id.rawValue])
        try db.execute(
            sql: "DELETE FROM outbox_files WHERE item_id IN (SELECT id FROM outbox_items WHERE owner = ?)", arguments: [erasure.id.rawValue])
        try db.execute(sql: "DELETE FROM outbox_items WHERE owner = ?", arguments: [erasure.id.rawValue])
        try db.execute(sql: "DELETE FROM outbox_holds WHERE owner = ?", arguments: [erasure.id.rawValue])
        for key in erasure.globalKeys { try db.execute(sql: "DELETE FROM global_values WHERE key = ?", arguments: [key]) }
        try eraseAssist(of: erasure.id, db)
        try eraseCrashes(of: erasure.id, db)
        try db.execute(sql: "DELETE FROM webhook_deliveries WHERE owner = ?", arguments: [erasure.id.rawValue])
        try eraseConversations(of: erasure.id, db)
        try eraseProfile(of: erasure.id, db)
        try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [erasure.id.rawValue])
    }

    public func inactiveUsers(before date: Date, limit: Int) async throws -> [UserActivity] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT u.id, u.updated_at, (SELECT max(t.last_activity) FROM mirror_threads t WHERE t.owner = u.id) AS threads_active
                    FROM users u
                    WHERE u.updated_at < ? AND NOT EXISTS (SELECT 1 FROM mirror_threads t WHERE t.owner = u.id AND t.last_activity >= ?)
                    ORDER BY u.updated_at, u.id LIMIT ?
                    """,
                arguments: [date, date.timeIntervalSince1970, max(0, limit)]
            ).compactMap { row in
                guard let id = UserID(storageKey: row["id"] as String) else { return nil }
                let updated: Date = row["updated_at"]
                let threads = (row["threads_active"] as Double?).map(Date.init(timeIntervalSince1970:))
                return UserActivity(id: id, lastActivity: max(updated, threads ?? .distantPast))
            }
        }
    }

    public func users(of app: AppID, after: UserID?, limit: Int) async throws -> [UserID] {
        try read { db in
            try String.fetchAll(
                db,
                sql: "SELECT id FROM users WHERE id \(app == .default ? "NOT LIKE" : "LIKE") ? AND id > ? ORDER BY id LIMIT ?",
                arguments: [app.userKeyPattern, after?.rawValue ?? "", max(0, limit)]
            ).compactMap { UserID(storageKey: $0) }
        }
    }

    public func conversation(of owner: UserID, after: Snowflake?, limit: Int) async throws -> MirrorPage {
        let messages = try read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(MirrorRow.columns) FROM mirror_messages
                        WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = ?) AND visible = 1 AND deleted = 0 AND id > ?
                        ORDER BY id LIMIT ?
                        """),
                arguments: [owner.rawValue, after?.column ?? Int64.min, limit + 1]
            ).map(Self.message)
        }
        return MirrorPage(messages: Array(messages.prefix(limit)), hasMore: messages.count > limit)
    }
}
