import DiscordREST
import Foundation
import GRDB
import PostgresNIO
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskStore
import ThreadDeskWire

private let user = UserID("assist-upgrade")!
private let thread = Snowflake(1_500_000_000_000_000_001)
private let answeredAt = Date(timeIntervalSince1970: 1_800_000_000)

/// Databases from before the assistant take its ledger and drafts; their users read as before.
@Suite("Assist store: upgrades")
struct AssistMigrationTests {
    /// A v12 file (no ledger, no drafts, live state without `assistAnsweredAt`) migrates to v13.
    @Test func aVersion12SQLiteFileMigratesTo13() async throws {
        let path = temporaryDatabasePath()
        do {
            let store = try SQLiteStore(path: path)
            try await store.withUser(user) { $0.record = UserRecord(id: user) }
        }
        try await rewriteAsEarlierVersion(path) { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v13: assistant ledger and drafts'")
            // And what came after v13.
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v14: crash reports, their groups and dSYMs'")
            for table in ["crash_groups", "crash_reports", "crash_answers", "dsyms"] { try db.execute(sql: "DROP TABLE \(table)") }
            try db.execute(sql: "DROP TABLE assist_usage")
            try db.execute(sql: "DROP TABLE assist_drafts")
            try db.execute(sql: "UPDATE users SET live_state = '{\"readSeq\":3}'")
        }
        let store = try SQLiteStore(path: path)
        #expect(try store.migrations().contains { $0.name == "v13: assistant ledger and drafts" })
        #expect(try store.migrations().allSatisfy(\.applied))
        try await expectAssistWorks(in: store)
    }

    /// A file a newer ThreadDesk migrated past this version's migrations is refused.
    @Test func aSQLiteFileNewerThanThisIsRefused() async throws {
        let path = temporaryDatabasePath()
        do { _ = try SQLiteStore(path: path) }
        try await rewriteAsEarlierVersion(path) { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        #expect(throws: SQLiteStore.SchemaTooNew.self) { try SQLiteStore(path: path) }
    }

    /// A schema-14 database migrates to the current schema.
    @Test(.enabled(if: postgresIsAvailable))
    func aSchema14PostgreSQLDatabaseMigrates() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                try await store.withUser(user) { $0.record = UserRecord(id: user) }
                // The database as schema 14 left it.
                try await store.client.query("DROP TABLE assist_usage")
                try await store.client.query("DROP TABLE assist_drafts")
                try await store.client.query("UPDATE users SET live_state = '{\"readSeq\":3}'")
                try await store.client.query("UPDATE schema_version SET version = 14")
                try await store.migrate()
                #expect(try await store.schemaVersionFound() == PostgresStore.schemaVersion)
                try await expectAssistWorks(in: store)
            }
        }
    }

    /// A database at a schema newer than this version's is refused, and left as it was.
    @Test(.enabled(if: postgresIsAvailable))
    func aPostgreSQLDatabaseNewerThanThisIsRefused() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                #expect(try await store.reserveAssistTokens(5, day: "2026-11-28", limits: ["app:default": 10]))
                try await store.client.query("UPDATE schema_version SET version = \(PostgresStore.schemaVersion + 1)")
                await #expect(throws: PostgresStore.SchemaTooNew.self) { try await store.migrate() }
                #expect(try await store.schemaVersionFound() == PostgresStore.schemaVersion + 1)
                #expect(try await store.assistTokensUsed("app:default", day: "2026-11-28") == 5)
            }
        }
    }

    /// The user's live state from before reads as it was, and keeps `assistAnsweredAt` after.
    private func expectAssistWorks(in store: any UserStore) async throws {
        let before = try #require(try await store.user(user))
        #expect(before.live.readSeq == 3 && before.live.assistAnsweredAt == nil)
        try await store.withUser(user) { $0.record?.live.assistAnsweredAt = answeredAt }
        let after = try #require(try await store.user(user))
        #expect(after.live.assistAnsweredAt == answeredAt && after.live.readSeq == 3)

        #expect(try await store.reserveAssistTokens(5, day: "2026-11-28", limits: [AssistKey.user(user): 10]))
        #expect(try await store.assistTokensUsed(AssistKey.user(user), day: "2026-11-28") == 5)
        let draft = AssistDraft(id: Snowflake(7), owner: user, thread: thread, answers: Snowflake(8), text: "hello", createdAt: answeredAt)
        try await store.saveDraft(draft)
        #expect(try await store.openDrafts(thread: thread) == [draft])
    }
}

/// The unread count counts what the user did not write, the assistant's answers included, on
/// the stores that keep the author as text (the enum gains `assistant` later; rows written by
/// that version must count here already).
@Suite("Unread counts: the assistant's answers")
struct AssistantUnreadCountTests {
    @Test func sqliteCountsAnAssistantRow() async throws {
        let path = temporaryDatabasePath()
        do {
            let store = try SQLiteStore(path: path)
            try await seedReplies(store)
        }
        try await rewriteAsEarlierVersion(path) { db in
            try db.execute(sql: "UPDATE mirror_messages SET author = 'assistant' WHERE id = ?", arguments: [Int64(1_500_000_000_000_000_012)])
        }
        #expect(try await SQLiteStore(path: path).supportMessageCount(thread: thread, after: nil) == 2)
    }

    @Test(.enabled(if: postgresIsAvailable))
    func postgresCountsAnAssistantRow() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                try await seedReplies(store)
                try await store.client.query("UPDATE mirror_messages SET author = 'assistant' WHERE id = \(Int64(1_500_000_000_000_000_012))")
                #expect(try await store.supportMessageCount(thread: thread, after: nil) == 2)
            }
        }
    }

    /// A user's message, then two of support's.
    private func seedReplies(_ store: any UserStore) async throws {
        try await store.saveMirrorThread(MirrorThread(id: thread, owner: user, complete: true, lastActivity: answeredAt))
        try await store.saveMirroredMessages(
            ([(11, .user), (12, .support), (13, .support)] as [(UInt64, MessageAuthor)]).map { id, author in
                MirroredMessage(
                    id: Snowflake(1_500_000_000_000_000_000 + id), threadID: thread, author: author, authorID: Snowflake(42),
                    authorUsername: "someone", authorName: nil, type: 0, content: "text \(id)", attachments: [], replyTo: nil,
                    createdAt: "2026-11-28T10:00:00.000000+00:00", editedAt: nil, visible: true)
            })
        #expect(try await store.supportMessageCount(thread: thread, after: nil) == 2)
    }
}
