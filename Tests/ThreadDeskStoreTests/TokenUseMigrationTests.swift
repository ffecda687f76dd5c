import Foundation
import GRDB
import PostgresNIO
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskStore

private let user = UserID("token-use-upgrade")!
private let noted = Date(timeIntervalSince1970: 1_800_000_000)

/// Databases from before tokens' last use was kept take the column, and their users' tokens keep
/// working (with no note: each counts from its first use after).
@Suite("Token use: upgrades")
struct TokenUseMigrationTests {
    @Test func anUpgradedSQLiteStoreReadsEarlierUsersAndKeepsNotes() async throws {
        let path = temporaryDatabasePath()
        do {
            let store = try SQLiteStore(path: path)
            try await store.withUser(user) { context in
                var record = UserRecord(id: user)
                record.addToken(hash: UserToken.hash("kept"))
                context.record = record
            }
        }
        try await rewriteAsEarlierVersion(path) { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v9: when each token was last used'")
            try db.execute(sql: "ALTER TABLE users DROP COLUMN token_used_at")
        }
        try await expectNotesKept(in: try SQLiteStore(path: path))
    }

    @Test(.enabled(if: postgresIsAvailable))
    func anUpgradedPostgreSQLStoreReadsEarlierUsersAndKeepsNotes() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                try await store.withUser(user) { context in
                    var record = UserRecord(id: user)
                    record.addToken(hash: UserToken.hash("kept"))
                    context.record = record
                }
                // The database as schema 9 left it.
                try await store.client.query("ALTER TABLE users DROP COLUMN token_used_at")
                try await store.client.query("UPDATE schema_version SET version = 9")
                try await store.migrate()
                try await expectNotesKept(in: store)
            }
        }
    }

    private func expectNotesKept(in store: any UserStore) async throws {
        let before = try #require(try await store.user(user))
        #expect(before.holdsToken(hash: UserToken.hash("kept")) && before.tokenUsedAt.isEmpty)
        try await store.withUser(user) { $0.record?.noteTokenUse(hash: UserToken.hash("kept"), at: noted) }
        #expect(try await store.user(user)?.tokenUsedAt == [UserToken.hash("kept"): noted])
    }
}
