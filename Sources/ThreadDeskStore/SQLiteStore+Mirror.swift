import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateMirror(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2: conversation mirror") { db in
            try db.execute(
                sql: """
                    CREATE TABLE mirror_threads (
                        id INTEGER PRIMARY KEY, owner TEXT NOT NULL, complete INTEGER NOT NULL, newest_seen INTEGER,
                        synced_epoch INTEGER NOT NULL, synced_at DOUBLE, last_activity DOUBLE NOT NULL, gone INTEGER NOT NULL);
                    CREATE INDEX mirror_threads_activity ON mirror_threads (last_activity);
                    CREATE TABLE mirror_messages (
                        id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL, author TEXT NOT NULL, author_id INTEGER,
                        author_username TEXT NOT NULL, author_name TEXT, type INTEGER NOT NULL, content TEXT NOT NULL,
                        attachments TEXT NOT NULL, reply_to INTEGER, created_at TEXT NOT NULL, edited_at TEXT,
                        visible INTEGER NOT NULL, deleted INTEGER NOT NULL, part_of INTEGER, push_state TEXT NOT NULL,
                        push_attempts INTEGER NOT NULL, push_next_at DOUBLE);
                    CREATE INDEX mirror_messages_thread ON mirror_messages (thread_id, id);
                    CREATE INDEX mirror_messages_part_of ON mirror_messages (part_of) WHERE part_of IS NOT NULL;
                    CREATE INDEX mirror_messages_due ON mirror_messages (push_next_at) WHERE push_state = 'pending';
                    """)
        }
        migrator.registerMigration("v3: live events") { db in
            try db.execute(
                sql: """
                    ALTER TABLE mirror_messages ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE mirror_messages ADD COLUMN shown_seq INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX mirror_messages_events ON mirror_messages (thread_id, event_seq) WHERE event_seq > 0;
                    CREATE INDEX mirror_threads_owner ON mirror_threads (owner);
                    CREATE TABLE event_sequence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
                    INSERT INTO event_sequence (id, value) VALUES (1, 0);
                    ALTER TABLE users ADD COLUMN live_state TEXT;
                    """)
        }
    }

    public func mirrorThread(_ id: Snowflake) async throws -> MirrorThread? {
        try read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM mirror_threads WHERE id = ?"), arguments: [id.column]).map(Self.thread)
        }
    }

    static func thread(_ row: Row) -> MirrorThread {
        MirrorThread(
            id: Snowflake(column: row["id"]), owner: UserID(storageKey: row["owner"] as String) ?? UserID("invalid")!, complete: row["complete"],
            newestSeen: (row["newest_seen"] as Int64?).map(Snowflake.init(column:)), syncedEpoch: row["synced_epoch"],
            syncedAt: (row["synced_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            lastActivity: Date(timeIntervalSince1970: row["last_activity"]), gone: row["gone"])
    }

    public func saveMirrorThread(_ thread: MirrorThread) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO mirror_threads (id, owner, complete, newest_seen, synced_epoch, synced_at, last_activity, gone)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    thread.id.column, thread.owner.rawValue, thread.complete, thread.newestSeen?.column, thread.syncedEpoch,
                    thread.syncedAt?.timeIntervalSince1970, thread.lastActivity.timeIntervalSince1970, thread.gone,
                ])
        }
    }

    public func mirroredMessages(_ ids: [Snowflake]) async throws -> [MirroredMessage] {
        guard !ids.isEmpty else { return [] }
        return try read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(MirrorRow.columns) FROM mirror_messages WHERE id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ",")))",
                arguments: StatementArguments(ids.map(\.column))
            ).map(Self.message)
        }
    }

    public func saveMirroredMessages(_ messages: [MirroredMessage]) async throws {
        guard !messages.isEmpty else { return }
        try await write { db in try Self.saveMirrored(messages, db) }
    }

    /// Saves whole messages in the write transaction `db` is in.
    static func saveMirrored(_ messages: [MirroredMessage], _ db: Database) throws {
        guard !messages.isEmpty else { return }
        let statement = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO mirror_messages (\(MirrorRow.columns)) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
        for message in messages {
            let row = MirrorRow(message)
            try statement.execute(arguments: [
                row.id, row.threadID, row.author, row.authorID, row.authorUsername, row.authorName, row.type, row.content,
                row.attachments, row.replyTo, row.createdAt, row.editedAt, row.visible, row.deleted, row.partOf, row.pushState,
                row.pushAttempts, row.pushNextAt, row.eventSeq, row.shownSeq, row.delivery, row.deliveryError,
            ])
        }
    }

    public func saveMirrorAlias(discordID: Snowflake, messageID: Snowflake, owner: UserID) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO mirror_aliases (discord_id, message_id, owner) VALUES (?, ?, ?)",
                arguments: [discordID.column, messageID.column, owner.rawValue])
        }
    }

    public func mirrorAliases(_ discordIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        try aliases(of: discordIDs, by: "discord_id", giving: "message_id")
    }

    public func discordIDs(of messageIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        try aliases(of: messageIDs, by: "message_id", giving: "discord_id")
    }

    private func aliases(of ids: [Snowflake], by column: String, giving other: String) throws -> [Snowflake: Snowflake] {
        guard !ids.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: ids.count).joined(separator: ",")
        return try read { db in
            var found: [Snowflake: Snowflake] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT \(column), \(other) FROM mirror_aliases WHERE \(column) IN (\(marks))", arguments: StatementArguments(ids.map(\.column)))
            {
                found[Snowflake(column: row[0])] = Snowflake(column: row[1])
            }
            return found
        }
    }

    public func moveMirroredMessages(from: Snowflake, to: Snowflake) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE mirror_messages SET thread_id = ? WHERE thread_id = ?", arguments: [to.column, from.column])
            try db.execute(sql: "DELETE FROM mirror_threads WHERE id = ?", arguments: [from.column])
        }
    }

    /// A row selected with `MirrorRow.columns`, read by position (no name lookups on the poll path).
    static func message(_ row: Row) -> MirroredMessage {
        MirrorRow(
            id: row[0], threadID: row[1], author: row[2], authorID: row[3], authorUsername: row[4], authorName: row[5], type: row[6],
            content: row[7], attachments: row[8], replyTo: row[9], createdAt: row[10], editedAt: row[11], visible: row[12],
            deleted: row[13], partOf: row[14], pushState: row[15], pushAttempts: row[16], pushNextAt: row[17], eventSeq: row[18],
            shownSeq: row[19], delivery: row[20], deliveryError: row[21]
        ).message
    }

    public func mirrorPage(thread: Snowflake, _ cursor: MirrorCursor, limit: Int) async throws -> MirrorPage {
        let shown = "thread_id = ? AND visible = 1 AND deleted = 0"
        let (sql, arguments): (String, StatementArguments) =
            switch cursor {
            case .after(let after, let before):
                (
                    "SELECT \(MirrorRow.columns) FROM mirror_messages WHERE \(shown) AND id > ? AND id < ? ORDER BY id ASC LIMIT ?",
                    [thread.column, after.column, before?.column ?? Int64.max, limit + 1]
                )
            case .before(let before):
                (
                    "SELECT \(MirrorRow.columns) FROM mirror_messages WHERE \(shown) AND id < ? ORDER BY id DESC LIMIT ?",
                    [thread.column, before?.column ?? Int64.max, limit + 1]
                )
            }
        var messages = try read { db in try Row.fetchAll(
                db.cachedStatement(sql: sql), arguments: arguments).map(Self.message) }
        let more = messages.count > limit
        messages = Array(messages.prefix(limit))
        if case .before = cursor { messages.reverse() }
        return MirrorPage(messages: messages, hasMore: more)
    }

    public func mirroredIDs(thread: Snowflake, from lowest: Snowflake) async throws -> [Snowflake] {
        try read { db in
            try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT id FROM mirror_messages WHERE thread_id = ? AND id >= ? AND deleted = 0 ORDER BY id"),
                arguments: [thread.column, lowest.column]
            ).map(Snowflake.init(column:))
        }
    }

    public func mirroredParts(of first: Snowflake) async throws -> [MirroredMessage] {
        try read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT \(MirrorRow.columns) FROM mirror_messages WHERE id = ? OR part_of = ? ORDER BY id"), arguments: [first.column, first.column]
            ).map(Self.message)
        }
    }

    /// The attachments column is JSON text: rows are narrowed by the id's digits, then checked exactly.
    public func mirroredMessage(withAttachment id: Snowflake, thread: Snowflake) async throws -> MirroredMessage? {
        try read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT \(MirrorRow.columns) FROM mirror_messages WHERE thread_id = ? AND deleted = 0 AND instr(attachments, ?) > 0"),
                arguments: [thread.column, id.description]
            ).map(Self.message).first { $0.attachments.contains { $0.id == id } }
        }
    }

    public func supportMessageCount(thread: Snowflake, after: Snowflake?) async throws -> Int {
        try read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM mirror_messages
                    WHERE thread_id = ? AND id > ? AND visible = 1 AND deleted = 0 AND author IN ('support', 'assistant')
                    """, arguments: [thread.column, after?.column ?? 0]) ?? 0
        }
    }

    public func duePushes(at now: Date, limit: Int) async throws -> [DuePush] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT m.id, m.thread_id, t.owner FROM mirror_messages m JOIN mirror_threads t ON t.id = m.thread_id
                    WHERE m.push_state = 'pending' AND m.push_next_at <= ? ORDER BY m.push_next_at, m.id LIMIT ?
                    """, arguments: [now.timeIntervalSince1970, limit]
            ).compactMap { row in
                UserID(storageKey: row["owner"] as String).map {
                    DuePush(owner: $0, threadID: Snowflake(column: row["thread_id"]), messageID: Snowflake(column: row["id"]))
                }
            }
        }
    }

    public func nextPushDue() async throws -> Date? {
        try read { db in
            try Double.fetchOne(
                db.cachedStatement(sql: "SELECT min(push_next_at) FROM mirror_messages WHERE push_state = 'pending'"))
                .map(Date.init(timeIntervalSince1970:))
        }
    }

    public func activeMirrorThreads(since date: Date) async throws -> [MirrorThread] {
        try read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM mirror_threads WHERE last_activity >= ? AND gone = 0 ORDER BY id"),
                arguments: [date.timeIntervalSince1970]
            ).map(Self.thread)
        }
    }

    public func nextEventSequences(_ count: Int) async throws -> [Int64] {
        guard count > 0 else { return [] }
        // One writer at a time: the numbers are handed out in the order they are committed.
        let last = try await write { db in
            try db.execute(sql: "UPDATE event_sequence SET value = value + ? WHERE id = 1", arguments: [count])
            return try Int64.fetchOne(db, sql: "SELECT value FROM event_sequence WHERE id = 1") ?? Int64(count)
        }
        return Array((last - Int64(count) + 1)...last)
    }

    public func mirrorEvents(owner: UserID, after sequence: Int64, limit: Int) async throws -> [MirroredMessage] {
        try read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(MirrorRow.columns) FROM mirror_messages
                        WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = ?) AND event_seq > ?
                        ORDER BY event_seq LIMIT ?
                        """), arguments: [owner.rawValue, sequence, limit]
            ).map(Self.message)
        }
    }

    public func latestEventSequence(owner: UserID) async throws -> Int64 {
        try read { db in
            try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT max(event_seq) FROM mirror_messages WHERE thread_id IN (SELECT id FROM mirror_threads WHERE owner = ?)"),
                arguments: [owner.rawValue]) ?? 0
        }
    }

    public func exclusively<T: Sendable>(_ job: String, _ body: () async throws -> T) async throws -> T? {
        try await jobs.exclusively(job, body)
    }
}
