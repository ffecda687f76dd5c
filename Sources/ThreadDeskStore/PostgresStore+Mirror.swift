import DiscordREST
import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    static let mirrorSchema = [
        """
        CREATE TABLE IF NOT EXISTS mirror_threads (
            id BIGINT PRIMARY KEY, owner TEXT NOT NULL, complete BOOLEAN NOT NULL, newest_seen BIGINT, synced_epoch INTEGER NOT NULL,
            synced_at DOUBLE PRECISION, last_activity DOUBLE PRECISION NOT NULL, gone BOOLEAN NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS mirror_threads_activity ON mirror_threads (last_activity)",
        """
        CREATE TABLE IF NOT EXISTS mirror_messages (
            id BIGINT PRIMARY KEY, thread_id BIGINT NOT NULL, author TEXT NOT NULL, author_id BIGINT, author_username TEXT NOT NULL,
            author_name TEXT, type INTEGER NOT NULL, content TEXT NOT NULL, attachments TEXT NOT NULL, reply_to BIGINT,
            created_at TEXT NOT NULL, edited_at TEXT, visible BOOLEAN NOT NULL, deleted BOOLEAN NOT NULL, part_of BIGINT,
            push_state TEXT NOT NULL, push_attempts INTEGER NOT NULL, push_next_at DOUBLE PRECISION)
        """,
        "CREATE INDEX IF NOT EXISTS mirror_messages_thread ON mirror_messages (thread_id, id)",
        "CREATE INDEX IF NOT EXISTS mirror_messages_part_of ON mirror_messages (part_of) WHERE part_of IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS mirror_messages_due ON mirror_messages (push_next_at) WHERE push_state = 'pending'",
        // Live events (the "v3" of the SQLite migrations).
        "ALTER TABLE mirror_messages ADD COLUMN IF NOT EXISTS event_seq BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE mirror_messages ADD COLUMN IF NOT EXISTS shown_seq BIGINT NOT NULL DEFAULT 0",
        "CREATE INDEX IF NOT EXISTS mirror_messages_events ON mirror_messages (thread_id, event_seq) WHERE event_seq > 0",
        "CREATE INDEX IF NOT EXISTS mirror_threads_owner ON mirror_threads (owner)",
        "CREATE SEQUENCE IF NOT EXISTS event_sequence",
        "ALTER TABLE users ADD COLUMN IF NOT EXISTS live_state TEXT",
    ]

    static let threadColumns = "id, owner, complete, newest_seen, synced_epoch, synced_at, last_activity, gone"

    public func mirrorThread(_ id: Snowflake) async throws -> MirrorThread? {
        try await remembered({ $0.thread(id) }, keep: { $0.keep($1, for: id, since: $2) }) {
            try await query("SELECT \(unescaped: Self.threadColumns) FROM mirror_threads WHERE id = \(id.column)").first.map(Self.thread)
        }
    }

    static func thread(_ row: PostgresRow) throws -> MirrorThread {
        let (id, owner, complete, newest, epoch, syncedAt, activity, gone) = try row.decode(
            (Int64, String, Bool, Int64?, Int, Double?, Double, Bool).self)
        guard let ownerID = UserID(storageKey: owner) else { throw StoreError.invalidRow("mirror thread owner") }
        return MirrorThread(
            id: Snowflake(column: id), owner: ownerID, complete: complete, newestSeen: newest.map(Snowflake.init(column:)),
            syncedEpoch: epoch, syncedAt: syncedAt.map(Date.init(timeIntervalSince1970:)), lastActivity: Date(timeIntervalSince1970: activity),
            gone: gone)
    }

    public func saveMirrorThread(_ thread: MirrorThread) async throws {
        try await query(
            """
            WITH saved AS (INSERT INTO mirror_threads (\(unescaped: Self.threadColumns))
            VALUES (\(thread.id.column), \(thread.owner.rawValue), \(thread.complete), \(thread.newestSeen?.column), \(thread.syncedEpoch),
                    \(thread.syncedAt?.timeIntervalSince1970), \(thread.lastActivity.timeIntervalSince1970), \(thread.gone))
            ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, complete = excluded.complete, newest_seen = excluded.newest_seen,
                synced_epoch = excluded.synced_epoch, synced_at = excluded.synced_at, last_activity = excluded.last_activity,
                gone = excluded.gone)
            SELECT pg_notify(\(changeChannel), \(Change.payload([.thread(thread.id)])))
            """)
    }

    public func mirroredMessages(_ ids: [Snowflake]) async throws -> [MirroredMessage] {
        guard !ids.isEmpty else { return [] }
        return try await query("SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages WHERE id = ANY(\(ids.map(\.column)))")
            .map(Self.message)
    }

    public func saveMirroredMessages(_ messages: [MirroredMessage]) async throws {
        guard !messages.isEmpty else { return }
        try await query(try Self.mirrorSave(messages, changes: changeChannel))
    }

    /// The statement that saves whole messages and tells every replica on `changes` (non-empty `messages`).
    static func mirrorSave(_ messages: [MirroredMessage], changes changeChannel: String) throws -> PostgresQuery {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 200 * messages.count, interpolationCount: 24 * messages.count)
        sql.appendLiteral("WITH saved AS (INSERT INTO mirror_messages (\(MirrorRow.columns)) VALUES ")
        for (index, row) in messages.map(MirrorRow.init).enumerated() {
            sql.appendLiteral(index == 0 ? "(" : ", (")
            sql.appendInterpolation(row.id)
            func add(_ value: some PostgresEncodable & Sendable) throws {
                sql.appendLiteral(", ")
                try sql.appendInterpolation(value)
            }
            func add(_ value: (some PostgresEncodable & Sendable)?) throws {
                sql.appendLiteral(", ")
                try sql.appendInterpolation(value)
            }
            try add(row.threadID); try add(row.author); try add(row.authorID); try add(row.authorUsername); try add(row.authorName)
            try add(row.type); try add(row.content); try add(row.attachments); try add(row.replyTo); try add(row.createdAt)
            try add(row.editedAt); try add(row.visible); try add(row.deleted); try add(row.partOf); try add(row.pushState)
            try add(row.pushAttempts); try add(row.pushNextAt); try add(row.eventSeq); try add(row.shownSeq)
            try add(row.delivery); try add(row.deliveryError)
            sql.appendLiteral(")")
        }
        sql.appendLiteral(
            """

            ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, author = excluded.author, author_id = excluded.author_id,
                author_username = excluded.author_username, author_name = excluded.author_name, type = excluded.type,
                content = excluded.content, attachments = excluded.attachments, reply_to = excluded.reply_to,
                created_at = excluded.created_at, edited_at = excluded.edited_at, visible = excluded.visible,
                deleted = excluded.deleted, part_of = excluded.part_of, push_state = excluded.push_state,
                push_attempts = excluded.push_attempts, push_next_at = excluded.push_next_at, event_seq = excluded.event_seq,
                shown_seq = excluded.shown_seq, delivery = excluded.delivery, delivery_error = excluded.delivery_error)
            SELECT pg_notify(
            """)
        // Every replica forgets what it knew of these threads, if and when this commits.
        sql.appendInterpolation(changeChannel)
        sql.appendLiteral(", ")
        sql.appendInterpolation(Change.payload(Set(messages.map(\.threadID)).sorted().map { .thread($0) }))
        sql.appendLiteral(")")
        return PostgresQuery(stringInterpolation: sql)
    }

    static func message(_ row: PostgresRow) throws -> MirroredMessage {
        let cells = row.makeRandomAccess()
        return MirrorRow(
            id: try cells["id"].decode(Int64.self), threadID: try cells["thread_id"].decode(Int64.self),
            author: try cells["author"].decode(String.self), authorID: try cells["author_id"].decode(Int64?.self),
            authorUsername: try cells["author_username"].decode(String.self), authorName: try cells["author_name"].decode(String?.self),
            type: try cells["type"].decode(Int.self), content: try cells["content"].decode(String.self),
            attachments: try cells["attachments"].decode(String.self), replyTo: try cells["reply_to"].decode(Int64?.self),
            createdAt: try cells["created_at"].decode(String.self), editedAt: try cells["edited_at"].decode(String?.self),
            visible: try cells["visible"].decode(Bool.self), deleted: try cells["deleted"].decode(Bool.self),
            partOf: try cells["part_of"].decode(Int64?.self), pushState: try cells["push_state"].decode(String.self),
            pushAttempts: try cells["push_attempts"].decode(Int.self), pushNextAt: try cells["push_next_at"].decode(Double?.self),
            eventSeq: try cells["event_seq"].decode(Int64.self), shownSeq: try cells["shown_seq"].decode(Int64.self),
            delivery: try cells["delivery"].decode(String.self), deliveryError: try cells["delivery_error"].decode(String?.self)
        ).message
    }

    public func mirrorPage(thread: Snowflake, _ cursor: MirrorCursor, limit: Int) async throws -> MirrorPage {
        let key = ReplicaCache.PageKey(cursor: cursor, limit: limit)
        return try await remembered({ $0.page(thread, key) }, keep: { $0.keep($1, for: thread, key, since: $2) }) {
            try await readMirrorPage(thread: thread, cursor, limit: limit)
        }
    }

    private func readMirrorPage(thread: Snowflake, _ cursor: MirrorCursor, limit: Int) async throws -> MirrorPage {
        var rows: [PostgresRow]
        switch cursor {
        case .after(let after, let before):
            rows = try await query(
                """
                SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages
                WHERE thread_id = \(thread.column) AND visible AND NOT deleted AND id > \(after.column) AND id < \(before?.column ?? Int64.max)
                ORDER BY id ASC LIMIT \(limit + 1)
                """)
        case .before(let before):
            rows = try await query(
                """
                SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages
                WHERE thread_id = \(thread.column) AND visible AND NOT deleted AND id < \(before?.column ?? Int64.max)
                ORDER BY id DESC LIMIT \(limit + 1)
                """)
        }
        let more = rows.count > limit
        rows = Array(rows.prefix(limit))
        var messages = try rows.map(Self.message)
        if case .before = cursor { messages.reverse() }
        return MirrorPage(messages: messages, hasMore: more)
    }

    public func mirroredIDs(thread: Snowflake, from lowest: Snowflake) async throws -> [Snowflake] {
        try await query(
            "SELECT id FROM mirror_messages WHERE thread_id = \(thread.column) AND id >= \(lowest.column) AND NOT deleted ORDER BY id"
        ).map { Snowflake(column: try $0.decode(Int64.self)) }
    }

    public func mirroredParts(of first: Snowflake) async throws -> [MirroredMessage] {
        try await query(
            "SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages WHERE id = \(first.column) OR part_of = \(first.column) ORDER BY id"
        ).map(Self.message)
    }

    /// The attachments column is JSON text: rows are narrowed by the id's digits, then checked exactly.
    public func mirroredMessage(withAttachment id: Snowflake, thread: Snowflake) async throws -> MirroredMessage? {
        try await query(
            """
            SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages
            WHERE thread_id = \(thread.column) AND NOT deleted AND strpos(attachments, \(id.description)) > 0
            """
        ).map(Self.message).first { $0.attachments.contains { $0.id == id } }
    }

    public func supportMessageCount(thread: Snowflake, after: Snowflake?) async throws -> Int {
        try await query(
            """
            SELECT count(*)::BIGINT FROM mirror_messages
            WHERE thread_id = \(thread.column) AND id > \(after?.column ?? 0) AND visible AND NOT deleted AND author IN ('support', 'assistant')
            """
        ).first.map { Int(try $0.decode(Int64.self)) } ?? 0
    }

    public func duePushes(at now: Date, limit: Int) async throws -> [DuePush] {
        try await query(
            """
            SELECT m.id, m.thread_id, t.owner FROM mirror_messages m JOIN mirror_threads t ON t.id = m.thread_id
            WHERE m.push_state = 'pending' AND m.push_next_at <= \(now.timeIntervalSince1970) ORDER BY m.push_next_at, m.id LIMIT \(limit)
            """
        ).compactMap { row in
            let (id, thread, owner) = try row.decode((Int64, Int64, String).self)
            return UserID(storageKey: owner).map { DuePush(owner: $0, threadID: Snowflake(column: thread), messageID: Snowflake(column: id)) }
        }
    }

    public func nextPushDue() async throws -> Date? {
        try await query("SELECT min(push_next_at) FROM mirror_messages WHERE push_state = 'pending'")
            .first.flatMap { try $0.decode(Double?.self) }.map(Date.init(timeIntervalSince1970:))
    }

    public func activeMirrorThreads(since date: Date) async throws -> [MirrorThread] {
        try await query(
            """
            SELECT \(unescaped: Self.threadColumns) FROM mirror_threads
            WHERE last_activity >= \(date.timeIntervalSince1970) AND NOT gone ORDER BY id
            """
        ).map(Self.thread)
    }

    public func nextEventSequences(_ count: Int) async throws -> [Int64] {
        guard count > 0 else { return [] }
        return try await query("SELECT nextval('event_sequence') FROM generate_series(1, \(count))")
            .map { try $0.decode(Int64.self) }.sorted()
    }

    public func mirrorEvents(owner: UserID, after sequence: Int64, limit: Int) async throws -> [MirroredMessage] {
        try await query(
            """
            SELECT \(unescaped: MirrorRow.columns) FROM mirror_messages
            WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = \(owner.rawValue)) AND event_seq > \(sequence)
            ORDER BY event_seq LIMIT \(limit)
            """
        ).map(Self.message)
    }

    public func latestEventSequence(owner: UserID) async throws -> Int64 {
        try await query(
            "SELECT max(event_seq) FROM mirror_messages WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = \(owner.rawValue))"
        ).first.flatMap { try $0.decode(Int64?.self) } ?? 0
    }

    /// A session-level advisory lock, tried and not waited for, on a connection held for the job:
    /// if the process dies, PostgreSQL ends the session and the lock with it.
    public func exclusively<T: Sendable>(_ job: String, _ body: () async throws -> T) async throws -> T? {
        try await withConnection(for: .waitsOnOthers) { connection in
            // Advisory locks are per database: the schema in the key keeps deployments that share one apart.
            let key = "threaddesk job \(job)"
            let rows = try await connection.rows(
                "SELECT pg_try_advisory_lock(hashtextextended(current_schema() || \(key), 0))", logger: logger)
            guard try rows.first?.decode(Bool.self) == true else { return nil }
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            if !connection.isClosed {
                _ = try? await connection.rows("SELECT pg_advisory_unlock(hashtextextended(current_schema() || \(key), 0))", logger: logger, deadline: .seconds(5))
            }
            return try result.get()
        }
    }

    /// One statement on a pooled connection; its rows (none that matter for a write).
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await database { try await client.withConnection { try await $0.rows(query, logger: logger) } }
    }

    public func saveMirrorAlias(discordID: Snowflake, messageID: Snowflake, owner: UserID) async throws {
        try await query(
            """
            INSERT INTO mirror_aliases (discord_id, message_id, owner) VALUES (\(discordID.column), \(messageID.column), \(owner.rawValue))
            ON CONFLICT (discord_id) DO NOTHING
            """)
    }

    public func mirrorAliases(_ discordIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        guard !discordIDs.isEmpty else { return [:] }
        var found: [Snowflake: Snowflake] = [:]
        for row in try await query("SELECT discord_id, message_id FROM mirror_aliases WHERE discord_id = ANY(\(discordIDs.map(\.column)))") {
            let (discord, message) = try row.decode((Int64, Int64).self)
            found[Snowflake(column: discord)] = Snowflake(column: message)
        }
        return found
    }

    public func discordIDs(of messageIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        guard !messageIDs.isEmpty else { return [:] }
        var found: [Snowflake: Snowflake] = [:]
        for row in try await query("SELECT discord_id, message_id FROM mirror_aliases WHERE message_id = ANY(\(messageIDs.map(\.column)))") {
            let (discord, message) = try row.decode((Int64, Int64).self)
            found[Snowflake(column: message)] = Snowflake(column: discord)
        }
        return found
    }

    public func moveMirroredMessages(from: Snowflake, to: Snowflake) async throws {
        try await query(
            """
            WITH moved AS (UPDATE mirror_messages SET thread_id = \(to.column) WHERE thread_id = \(from.column)),
                gone AS (DELETE FROM mirror_threads WHERE id = \(from.column))
            SELECT pg_notify(\(changeChannel), \(Change.payload([.thread(from), .thread(to)])))
            """)
    }
}
