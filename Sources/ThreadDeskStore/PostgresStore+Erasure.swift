import Deadlines
import DiscordREST
import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    /// One transaction holding the user's advisory lock (the one `withUser` takes, so no replica
    /// writes the user meanwhile) from the first read, across `prepare` (Discord), to the deletes.
    public func eraseUser(_ id: UserID, _ prepare: (inout ErasureContext) async throws -> Void) async throws -> Bool {
        // Nothing is written before the deletes: rolling back after `prepare` failed loses nothing.
        try await inUserTransaction(id, work: .waitsOnOthers) { connection in
            let record = try await Self.fetchUser(id, on: connection, logger: logger)
            let threads = try await connection.rows(
                "SELECT \(unescaped: Self.threadColumns) FROM mirror_threads WHERE owner = \(id.rawValue) ORDER BY id", logger: logger
            ).map(Self.thread)
            var context = ErasureContext(id: id, record: record, threads: threads)
            try await prepare(&context)
            try await Self.erase(context, on: connection, logger: logger)
            // Every replica forgets the user and their threads, if and when this commits.
            let changes = [Change.user(id)] + (context.threadIDs.map { .thread($0) })
            try await connection.rows("SELECT pg_notify(\(changeChannel), \(Change.payload(changes)))", logger: logger)
            return record != nil || !threads.isEmpty
        }
    }

    private static func erase(_ erasure: ErasureContext, on connection: PostgresConnection, logger: Logger) async throws {
        let id = erasure.id.rawValue
        let threads = erasure.threadIDs.map(\.column)
        try await connection.rows("DELETE FROM mirror_messages WHERE thread_id = ANY(\(threads))", logger: logger)
        try await connection.rows("DELETE FROM mirror_aliases WHERE owner = \(id)", logger: logger)
        try await connection.rows("DELETE FROM mirror_threads WHERE id = ANY(\(threads)) OR owner = \(id)", logger: logger)
        try await connection.rows("DELETE FROM idempotency WHERE user_id = \(id)", logger: logger)
        try await connection.rows(
            "DELETE FROM outbox_files WHERE item_id IN (SELECT id FROM outbox_items WHERE owner = \(id))", logger: logger)
        try await connection.rows("DELETE FROM outbox_items WHERE owner = \(id)", logger: logger)
        try await connection.rows("DELETE FROM outbox_holds WHERE owner = \(id)", logger: logger)
        try await connection.rows("DELETE FROM global_values WHERE key = ANY(\(erasure.globalKeys))", logger: logger)
        try await connection.rows("DELETE FROM quota_buckets WHERE key = ANY(\(erasure.quotaKeys))", logger: logger)
        try await eraseAssist(of: erasure.id, on: connection, logger: logger)
        try await eraseCrashes(of: erasure.id, on: connection, logger: logger)
        try await connection.rows("DELETE FROM webhook_deliveries WHERE owner = \(id)", logger: logger)
        try await eraseConversations(of: erasure.id, on: connection, logger: logger)
        try await eraseProfile(of: erasure.id, on: connection, logger: logger)
        try await connection.rows("DELETE FROM users WHERE id = \(id)", logger: logger)
    }

    public func inactiveUsers(before date: Date, limit: Int) async throws -> [UserActivity] {
        try await query(
            """
            SELECT u.id, u.updated_at, (SELECT max(t.last_activity) FROM mirror_threads t WHERE t.owner = u.id)
            FROM users u
            WHERE u.updated_at < \(date)
              AND NOT EXISTS (SELECT 1 FROM mirror_threads t WHERE t.owner = u.id AND t.last_activity >= \(date.timeIntervalSince1970))
            ORDER BY u.updated_at, u.id LIMIT \(max(0, limit))
            """
        ).compactMap { row in
            let (raw, updated, threads) = try row.decode((String, Date, Double?).self)
            guard let id = UserID(storageKey: raw) else { return nil }
            return UserActivity(id: id, lastActivity: max(updated, threads.map(Date.init(timeIntervalSince1970:)) ?? .distantPast))
        }
    }

    public func users(of app: AppID, after: UserID?, limit: Int) async throws -> [UserID] {
        let pattern = app.userKeyPattern
        let cursor = after?.rawValue ?? ""
        let rows =
            app == .default
            ? try await query("SELECT id FROM users WHERE id NOT LIKE \(pattern) AND id COLLATE \"C\" > \(cursor) ORDER BY id COLLATE \"C\" LIMIT \(max(0, limit))")
            : try await query("SELECT id FROM users WHERE id LIKE \(pattern) AND id COLLATE \"C\" > \(cursor) ORDER BY id COLLATE \"C\" LIMIT \(max(0, limit))")
        return try rows.compactMap { UserID(storageKey: try $0.decode(String.self)) }
    }

    public func conversation(of owner: UserID, after: Snowflake?, limit: Int) async throws -> MirrorPage {
        let rows = try await query(
            """
            SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages
            WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = \(owner.rawValue)) AND visible AND NOT deleted
              AND id > \(after?.column ?? Int64.min)
            ORDER BY id LIMIT \(limit + 1)
            """)
        let messages = try rows.prefix(limit).map(Self.message)
        return MirrorPage(messages: messages, hasMore: rows.count > limit)
    }
}
