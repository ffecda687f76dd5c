import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateAssist(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v13: assistant ledger and drafts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE assist_usage (key TEXT NOT NULL, day TEXT NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (key, day));
                    CREATE TABLE assist_drafts (
                        id INTEGER PRIMARY KEY, owner TEXT NOT NULL, thread_id INTEGER NOT NULL, answers INTEGER NOT NULL,
                        state TEXT NOT NULL, text TEXT NOT NULL, faq_ids TEXT NOT NULL, note_id INTEGER, sent_message_id INTEGER,
                        actor TEXT, interaction_id TEXT, created_at DOUBLE NOT NULL, updated_at DOUBLE NOT NULL);
                    CREATE INDEX assist_drafts_thread ON assist_drafts (thread_id);
                    CREATE INDEX assist_drafts_owner ON assist_drafts (owner);
                    """)
        }
    }

    /// One write transaction: SQLite has one writer, so no other reservation reads between this
    /// one's check and its update.
    public func reserveAssistTokens(_ tokens: Int, day: String, limits: [String: Int]) async throws -> Bool {
        let tokens = max(0, tokens)
        return try await write { db in
            for (key, limit) in limits where limit > 0 {
                let used = try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT tokens FROM assist_usage WHERE key = ? AND day = ?"), arguments: [key, day]) ?? 0
                guard used + tokens <= limit else { return false }
            }
            try Self.addAssistTokens(tokens, day: day, keys: Array(limits.keys), db)
            return true
        }
    }

    public func adjustAssistTokens(_ delta: Int, day: String, keys: [String]) async throws {
        try await write { db in try Self.addAssistTokens(delta, day: day, keys: keys, db) }
    }

    /// Adds `delta` to each key's row (made when missing), flooring at 0.
    private static func addAssistTokens(_ delta: Int, day: String, keys: [String], _ db: Database) throws {
        for key in Set(keys) {
            try db.execute(
                sql: """
                    INSERT INTO assist_usage (key, day, tokens) VALUES (?, ?, max(0, ?))
                    ON CONFLICT (key, day) DO UPDATE SET tokens = max(0, tokens + ?)
                    """,
                arguments: [key, day, delta, delta])
        }
    }

    public func assistTokensUsed(_ key: String, day: String) async throws -> Int {
        try read { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT tokens FROM assist_usage WHERE key = ? AND day = ?"), arguments: [key, day]) ?? 0
        }
    }

    public func pruneAssistUsage(before day: String) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM assist_usage WHERE day < ?", arguments: [day])
            return db.changesCount
        }
    }

    private static let draftColumns =
        "id, owner, thread_id, answers, state, text, faq_ids, note_id, sent_message_id, actor, interaction_id, created_at, updated_at"

    /// A row selected with `draftColumns`; nil for one this version cannot read (a state a newer
    /// version added).
    private static func draft(_ row: Row) -> AssistDraft? {
        guard let owner = UserID(storageKey: row[1] as String), let state = AssistDraft.State(rawValue: row[4]) else { return nil }
        return AssistDraft(
            id: Snowflake(column: row[0]), owner: owner, thread: Snowflake(column: row[2]), answers: Snowflake(column: row[3]), state: state,
            text: row[5], faqIDs: RecordJSON.decode(row[6] as String) ?? [], noteID: (row[7] as Int64?).map(Snowflake.init(column:)),
            sentMessageID: (row[8] as Int64?).map(Snowflake.init(column:)), actor: row[9], interactionID: row[10],
            createdAt: Date(timeIntervalSince1970: row[11]), updatedAt: Date(timeIntervalSince1970: row[12]))
    }

    public func draft(_ id: Snowflake) async throws -> AssistDraft? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.draftColumns) FROM assist_drafts WHERE id = ?", arguments: [id.column]).flatMap(Self.draft)
        }
    }

    public func openDrafts(thread: Snowflake) async throws -> [AssistDraft] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.draftColumns) FROM assist_drafts
                    WHERE thread_id = ? AND state IN (\(Self.states(AssistDraft.State.open))) ORDER BY created_at, id
                    """,
                arguments: [thread.column]
            ).compactMap(Self.draft)
        }
    }

    public func draftsBeingSent(limit: Int) async throws -> [AssistDraft] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.draftColumns) FROM assist_drafts WHERE state = ? ORDER BY updated_at, id LIMIT ?",
                arguments: [AssistDraft.State.sending.rawValue, limit]
            ).compactMap(Self.draft)
        }
    }

    /// The states as an SQL list of literals (the enum's own names: nothing to escape).
    private static func states(_ states: [AssistDraft.State]) -> String {
        states.map { "'\($0.rawValue)'" }.joined(separator: ", ")
    }

    public func saveDraft(_ draft: AssistDraft) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO assist_drafts (\(Self.draftColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    draft.id.column, draft.owner.rawValue, draft.thread.column, draft.answers.column, draft.state.rawValue, draft.text,
                    RecordJSON.encode(draft.faqIDs) ?? "[]", draft.noteID?.column, draft.sentMessageID?.column, draft.actor,
                    draft.interactionID, draft.createdAt.timeIntervalSince1970, draft.updatedAt.timeIntervalSince1970,
                ])
        }
    }

    public func pruneDrafts(closedBefore date: Date) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM assist_drafts WHERE state IN (\(Self.states(AssistDraft.State.closed))) AND updated_at < ?",
                arguments: [date.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// The user's drafts and ledger rows, in the erasure's transaction.
    static func eraseAssist(of id: UserID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM assist_drafts WHERE owner = ?", arguments: [id.rawValue])
        try db.execute(sql: "DELETE FROM assist_usage WHERE key = ?", arguments: [AssistKey.user(id)])
    }
}
