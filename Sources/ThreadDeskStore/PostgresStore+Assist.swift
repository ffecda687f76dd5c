import DiscordREST
import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    /// The assistant's token ledger and drafts (schema 15).
    static let assistSchema = [
        "CREATE TABLE IF NOT EXISTS assist_usage (key TEXT NOT NULL, day TEXT NOT NULL, tokens BIGINT NOT NULL, PRIMARY KEY (key, day))",
        """
        CREATE TABLE IF NOT EXISTS assist_drafts (
            id BIGINT PRIMARY KEY, owner TEXT NOT NULL, thread_id BIGINT NOT NULL, answers BIGINT NOT NULL, state TEXT NOT NULL,
            text TEXT NOT NULL, faq_ids TEXT NOT NULL, note_id BIGINT, sent_message_id BIGINT, actor TEXT, interaction_id TEXT,
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS assist_drafts_thread ON assist_drafts (thread_id)",
        "CREATE INDEX IF NOT EXISTS assist_drafts_owner ON assist_drafts (owner)",
    ]

    /// One transaction across replicas: every key's row is made if missing, then locked in key
    /// order (two reservations never wait on each other's locks crosswise), checked, and added to.
    public func reserveAssistTokens(_ tokens: Int, day: String, limits: [String: Int]) async throws -> Bool {
        let tokens = Int64(max(0, tokens))
        let keys = limits.keys.sorted()
        guard !keys.isEmpty else { return true }
        return try await inTransaction { connection in
            for key in keys {
                try await connection.rows(
                    "INSERT INTO assist_usage (key, day, tokens) VALUES (\(key), \(day), 0) ON CONFLICT (key, day) DO NOTHING", logger: logger)
            }
            var used: [String: Int64] = [:]
            for row in try await connection.rows(
                "SELECT key, tokens FROM assist_usage WHERE day = \(day) AND key = ANY(\(keys)) ORDER BY key FOR UPDATE", logger: logger)
            {
                let (key, tokens) = try row.decode((String, Int64).self)
                used[key] = tokens
            }
            for (key, limit) in limits where limit > 0 {
                guard used[key, default: 0] + tokens <= Int64(limit) else { return false }
            }
            try await Self.addAssistTokens(tokens, day: day, keys: keys, on: connection, logger: logger)
            return true
        }
    }

    public func adjustAssistTokens(_ delta: Int, day: String, keys: [String]) async throws {
        let keys = Set(keys).sorted()
        guard !keys.isEmpty else { return }
        try await inTransaction { connection in
            try await Self.addAssistTokens(Int64(delta), day: day, keys: keys, on: connection, logger: logger)
        }
    }

    /// Adds `delta` to each key's row (made when missing), flooring at 0, in key order.
    private static func addAssistTokens(_ delta: Int64, day: String, keys: [String], on connection: PostgresConnection, logger: Logger) async throws {
        for key in keys {
            try await connection.rows(
                """
                INSERT INTO assist_usage (key, day, tokens) VALUES (\(key), \(day), GREATEST(0, \(delta)))
                ON CONFLICT (key, day) DO UPDATE SET tokens = GREATEST(0, assist_usage.tokens + \(delta))
                """, logger: logger)
        }
    }

    public func assistTokensUsed(_ key: String, day: String) async throws -> Int {
        try await query("SELECT tokens FROM assist_usage WHERE key = \(key) AND day = \(day)").first.map { Int(try $0.decode(Int64.self)) } ?? 0
    }

    public func pruneAssistUsage(before day: String) async throws -> Int {
        try await query("WITH gone AS (DELETE FROM assist_usage WHERE day < \(day) RETURNING 1) SELECT count(*)::BIGINT FROM gone")
            .first.map { Int(try $0.decode(Int64.self)) } ?? 0
    }

    private static let draftColumns =
        "id, owner, thread_id, answers, state, text, faq_ids, note_id, sent_message_id, actor, interaction_id, created_at, updated_at"

    /// A row selected with `draftColumns`; nil for one this version cannot read (a state a newer
    /// version added).
    private static func draft(_ row: PostgresRow) throws -> AssistDraft? {
        let (id, owner, thread, answers, state, text, faqIDs, note, sent, actor, interaction, created, updated) = try row.decode(
            (Int64, String, Int64, Int64, String, String, String, Int64?, Int64?, String?, String?, Date, Date).self)
        guard let ownerID = UserID(storageKey: owner), let draftState = AssistDraft.State(rawValue: state) else { return nil }
        return AssistDraft(
            id: Snowflake(column: id), owner: ownerID, thread: Snowflake(column: thread), answers: Snowflake(column: answers),
            state: draftState, text: text, faqIDs: RecordJSON.decode(faqIDs) ?? [], noteID: note.map(Snowflake.init(column:)),
            sentMessageID: sent.map(Snowflake.init(column:)), actor: actor, interactionID: interaction, createdAt: created, updatedAt: updated)
    }

    public func draft(_ id: Snowflake) async throws -> AssistDraft? {
        try await query("SELECT \(unescaped: Self.draftColumns) FROM assist_drafts WHERE id = \(id.column)").first.flatMap(Self.draft)
    }

    public func openDrafts(thread: Snowflake) async throws -> [AssistDraft] {
        try await query(
            """
            SELECT \(unescaped: Self.draftColumns) FROM assist_drafts
            WHERE thread_id = \(thread.column) AND state = ANY(\(AssistDraft.State.open.map(\.rawValue))) ORDER BY created_at, id
            """
        ).compactMap(Self.draft)
    }

    public func draftsBeingSent(limit: Int) async throws -> [AssistDraft] {
        try await query(
            """
            SELECT \(unescaped: Self.draftColumns) FROM assist_drafts
            WHERE state = \(AssistDraft.State.sending.rawValue) ORDER BY updated_at, id LIMIT \(limit)
            """
        ).compactMap(Self.draft)
    }

    public func saveDraft(_ draft: AssistDraft) async throws {
        try await query(
            """
            INSERT INTO assist_drafts (\(unescaped: Self.draftColumns))
            VALUES (\(draft.id.column), \(draft.owner.rawValue), \(draft.thread.column), \(draft.answers.column), \(draft.state.rawValue),
                \(draft.text), \(RecordJSON.encode(draft.faqIDs) ?? "[]"), \(draft.noteID?.column), \(draft.sentMessageID?.column),
                \(draft.actor), \(draft.interactionID), \(draft.createdAt), \(draft.updatedAt))
            ON CONFLICT (id) DO UPDATE SET
                owner = excluded.owner, thread_id = excluded.thread_id, answers = excluded.answers, state = excluded.state,
                text = excluded.text, faq_ids = excluded.faq_ids, note_id = excluded.note_id, sent_message_id = excluded.sent_message_id,
                actor = excluded.actor, interaction_id = excluded.interaction_id, created_at = excluded.created_at,
                updated_at = excluded.updated_at
            """)
    }

    public func pruneDrafts(closedBefore date: Date) async throws -> Int {
        try await query(
            """
            WITH gone AS (
                DELETE FROM assist_drafts WHERE state = ANY(\(AssistDraft.State.closed.map(\.rawValue))) AND updated_at < \(date) RETURNING 1)
            SELECT count(*)::BIGINT FROM gone
            """
        ).first.map { Int(try $0.decode(Int64.self)) } ?? 0
    }

    /// The user's drafts and ledger rows, in the erasure's transaction.
    static func eraseAssist(of id: UserID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.rows("DELETE FROM assist_drafts WHERE owner = \(id.rawValue)", logger: logger)
        try await connection.rows("DELETE FROM assist_usage WHERE key = \(AssistKey.user(id))", logger: logger)
    }

    /// Runs `body` in one transaction on a pooled connection: committed when it returns, rolled
    /// back when it throws.
    private func inTransaction<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await database {
            try await client.withConnection { connection in
                try await connection.rows("BEGIN", logger: logger)
                do {
                    let result = try await body(connection)
                    try await connection.rows("COMMIT", logger: logger)
                    return result
                } catch {
                    await Self.rollBack(connection, after: error, logger: logger)
                    throw error
                }
            }
        }
    }
}
