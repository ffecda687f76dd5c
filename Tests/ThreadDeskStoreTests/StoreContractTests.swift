import Foundation
import GRDB

import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskStore
import PostgresNIO

/// The behaviour every `UserStore` must have. New implementations join `StoreKind`.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// PostgreSQL takes part when scripts/test started one (THREADDESK_POSTGRES_URL).
    static var available: [StoreKind] {
        allCases.filter { $0 != .postgres || ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"] != nil }
    }

    /// A fresh, empty store of this kind for the duration of `body`. `lockWait`: how long a
    /// user's lock may be waited for (a test that queues many on one user gives it room, so a
    /// busy machine makes it slower, not red).
    func with<T: Sendable>(lockWait: Duration = UserLockWait.standard, _ body: (any UserStore) async throws -> T) async throws -> T {
        switch self {
        case .memory: return try await body(MemoryStore(lockWait: lockWait))
        case .sqlite: return try await body(SQLiteStore(path: temporaryDatabasePath(), lockWait: lockWait))
        case .postgres:
            return try await withFreshPostgresSchema { url in try await PostgresStore.withRunning(url: url, lockWait: lockWait, body) }
        }
    }
}

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory
        .appendingPathComponent("threaddesk-tests-\(UUID().uuidString)/threaddesk.sqlite").path
}

/// Rewrites the SQLite database at `path` as an earlier version left it. The store just closed
/// may still be letting go of the file: waits for it, within a bound.
func rewriteAsEarlierVersion(_ path: String, _ updates: @escaping @Sendable (Database) throws -> Void) async throws {
    var configuration = Configuration()
    configuration.busyMode = .timeout(30)
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    try await queue.write(updates)
    try queue.close()
}

private struct Boom: Error {}

private let alice = UserID("alice")!
private let bob = UserID("bob")!

/// The store is the sum of small protocols; each has its contract, and every store (memory,
/// SQLite, PostgreSQL when it is there) keeps each.
@Suite("UserRecords contract")
struct UserRecordsContract {

    @Test(arguments: StoreKind.available)
    func createsReadsAndUpdatesAUser(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.user(alice) == nil)
            try await store.withUser(alice) { context in
                #expect(context.record == nil)
                var record = UserRecord(id: alice)
                record.tokenHash = UserToken.hash("earlier")
                record.addToken(hash: UserToken.hash("secret"))
                record.noteTokenUse(hash: UserToken.hash("secret"), at: Date(timeIntervalSince1970: 1_800_000_000))
                record.threadID = "123"
                record.pushToken = "abcd"
                record.pushEnvironment = .development
                record.installation = InstallationInfo(appVersion: "1.4.0", other: ["theme": "dark"])
                context.record = record
            }
            let stored = try #require(try await store.user(alice))
            #expect(stored.threadID == "123")
            #expect(stored.earlierTokenHashes == [UserToken.hash("earlier")])
            #expect(stored.holdsToken(hash: UserToken.hash("earlier")) && stored.holdsToken(hash: UserToken.hash("secret")))
            #expect(stored.tokenUsedAt == [UserToken.hash("secret"): Date(timeIntervalSince1970: 1_800_000_000)])
            #expect(stored.pushEnvironment == .development)
            #expect(stored.installation?.other == ["theme": "dark"])
            #expect(try await store.user(forTokenHash: UserToken.hash("secret"))?.id == alice)
            #expect(try await store.user(forTokenHash: UserToken.hash("secret"))?.threadID == "123")
            #expect(try await store.user(forTokenHash: UserToken.hash("other")) == nil)
            #expect(try await store.userID(forThread: "123") == alice)

            try await store.withUser(alice) { context in
                #expect(context.record?.threadID == "123")
                context.record?.threadID = "456"
            }
            #expect(try await store.userID(forThread: "123") == nil)
            #expect(try await store.userID(forThread: "456") == alice)
        }
    }

    /// What an id has been is kept for good: a thread that goes (deleted in Discord) leaves the
    /// id used, and a `/v1` token leaves it a `/v1` user after signing out.
    @Test(arguments: StoreKind.available)
    func whatAnIdHasBeenOutlivesWhatItHas(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice) { context in
                var record = UserRecord(id: alice)
                #expect(record.isUnusedClaim)
                record.addToken(hash: UserToken.hash("secret"))
                #expect(record.isUnusedClaim)
                record.threadID = "123"
                context.record = record
            }
            try await store.withUser(alice) { context in
                context.record?.threadID = nil
                context.record?.removeToken(hash: UserToken.hash("secret"))
            }
            let stored = try #require(try await store.user(alice))
            #expect(stored.threadID == nil && stored.tokenHash == nil)
            #expect(stored.history.contains(.used) && stored.history.contains(.v1))
            #expect(!stored.isUnusedClaim)
        }
    }

    @Test(arguments: StoreKind.available)
    func oneUserAtATimeEveryUpdateKept(kind: StoreKind) async throws {
        // Fifty queue on one user at once: the last waits for forty-nine transactions, which on a
        // machine running the whole suite at once took over the 30 s a request may wait.
        try await kind.with(lockWait: .seconds(120)) { (store: any UserStore) async throws in
            let inside = Locked((now: 0, most: 0))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await store.withUser(alice) { context in
                            inside.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                            var record = context.record ?? UserRecord(id: alice)
                            let count = Int(record.lastReadMessageID ?? "0")!
                            await Task.yield()
                            record.lastReadMessageID = String(count + 1)
                            context.record = record
                            inside.withLock { $0.now -= 1 }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(inside.withLock { $0.most } == 1)
            #expect(try await store.user(alice)?.lastReadMessageID == "50")
        }
    }

    @Test(arguments: StoreKind.available)
    func differentUsersDoNotWaitForEachOther(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let (bobRan, signal) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Alice holds her lock until Bob has been served: a global lock would deadlock here.
                    try await store.withUser(alice) { _ in
                        for await _ in bobRan { break }
                    }
                }
                group.addTask {
                    try await store.withUser(bob) { context in context.record = UserRecord(id: bob) }
                    signal.yield()
                    signal.finish()
                }
                try await group.waitForAll()
            }
            #expect(try await store.user(bob) != nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func keepsChangesMadeBeforeTheBodyThrew(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            await #expect(throws: Boom.self) {
                try await store.withUser(alice) { context in
                    var record = UserRecord(id: alice)
                    record.threadID = "created-before-failure"
                    context.record = record
                    throw Boom()
                }
            }
            #expect(try await store.user(alice)?.threadID == "created-before-failure")
        }
    }

}

@Suite("IdempotencyRecords contract")
struct IdempotencyRecordsContract {
    @Test(arguments: StoreKind.available)
    func keepsWhatARequestDidPerUserAndKey(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let result = IdempotentResult(fingerprint: "f1", messageIDs: ["1", "2"], fileName: "d.json", byteCount: 12)
            try await store.withUser(alice, idempotencyKey: "k1") { context in
                #expect(context.keptResult == nil)
                context.record = UserRecord(id: alice)
                context.result = result
            }
            try await store.withUser(alice, idempotencyKey: "k1") { context in
                #expect(context.keptResult == result)
            }
            try await store.withUser(alice, idempotencyKey: "k2") { context in
                #expect(context.keptResult == nil)
            }
            try await store.withUser(bob, idempotencyKey: "k1") { context in
                #expect(context.keptResult == nil)
            }
        }
    }

    /// What a body that failed did is kept too: the posts it made are not made again.
    @Test(arguments: StoreKind.available)
    func keepsTheResultOfABodyThatThrew(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            await #expect(throws: Boom.self) {
                try await store.withUser(alice, idempotencyKey: "k") { context in
                    context.record = UserRecord(id: alice)
                    context.result = IdempotentResult(fingerprint: "f", messageIDs: ["9"])
                    throw Boom()
                }
            }
            let kept = try await store.withUser(alice, idempotencyKey: "k") { $0.keptResult }
            #expect(kept?.messageIDs == ["9"])
        }
    }

    /// Results kept for idempotency keys go once older than the cutoff; newer ones stay.
    @Test(arguments: StoreKind.available)
    func oldResultsArePruned(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: "send-1") { context in
                context.record = UserRecord(id: alice)
                context.result = IdempotentResult(fingerprint: "f", messageIDs: ["1"])
            }
            #expect(try await store.pruneResults(before: Date().addingTimeInterval(-3600)) == 0)
            let kept = try await store.withUser(alice, idempotencyKey: "send-1") { $0.keptResult }
            #expect(kept?.messageIDs == ["1"])
            #expect(try await store.pruneResults(before: Date().addingTimeInterval(60)) == 1)
            let gone = try await store.withUser(alice, idempotencyKey: "send-1") { $0.keptResult }
            #expect(gone == nil)
        }
    }

    /// Rows written before results were kept hold the answer itself: a retry across the upgrade
    /// still finds what its first attempt posted.
    @Test func answersKeptByEarlierVersionsAreReadAsResults() throws {
        let message = IdempotentResult(stored: Data(#"{"id":"11","content":"hi","partIds":["11","12"]}"#.utf8), fingerprint: "f")
        #expect(message == IdempotentResult(fingerprint: "f", messageIDs: ["11", "12"]))
        let single = IdempotentResult(stored: Data(#"{"id":"11","content":"hi"}"#.utf8), fingerprint: "f")
        #expect(single?.messageIDs == ["11"])
        let diagnostics = IdempotentResult(
            stored: Data(#"{"filename":"d.json","messageId":"7","size":30}"#.utf8), fingerprint: "")
        #expect(diagnostics == IdempotentResult(fingerprint: "", messageIDs: ["7"], fileName: "d.json", byteCount: 30))
        let current = IdempotentResult(fingerprint: "g", messageIDs: ["5"], fileName: nil, byteCount: nil)
        #expect(IdempotentResult(stored: current.encoded, fingerprint: "g") == current)
        #expect(IdempotentResult(stored: Data("not json".utf8), fingerprint: "g") == nil)
        #expect(IdempotentResult(stored: Data("{}".utf8), fingerprint: "g") == nil, "an answer naming no message is no result")
    }
}

@Suite("GlobalValues and StoreLifecycle contract")
struct GlobalValuesContract {
    @Test(arguments: StoreKind.available)
    func globalValues(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.globalValue("gateway.seq") == nil)
            try await store.setGlobalValue("gateway.seq", to: "41")
            try await store.setGlobalValue("gateway.seq", to: "42")
            #expect(try await store.globalValue("gateway.seq") == "42")
            try await store.setGlobalValue("gateway.seq", to: nil)
            #expect(try await store.globalValue("gateway.seq") == nil)
        }
    }

    /// Migrating again is a no-op that keeps every row: replicas starting at once all migrate.
    @Test(arguments: StoreKind.available)
    func migratingAgainKeepsEverything(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.setGlobalValue("kept", to: "yes")
            try await store.migrate()
            try await store.migrate()
            #expect(try await store.globalValue("kept") == "yes")
            try await store.checkReachable()
        }
    }
}

@Suite("QuotaBuckets contract")
struct QuotaBucketsContract {
    @Test(arguments: StoreKind.available)
    func tokenBucketsRefuseOnceEmptyAndSayForHowLong(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let limit = QuotaLimit(3, per: .seconds(3600))
            for _ in 0..<3 { #expect(try await store.takeToken("send:u:alice", limit: limit) == nil) }
            let wait = try #require(try await store.takeToken("send:u:alice", limit: limit))
            // One token comes back every 1,200 s.
            #expect(wait > .seconds(1100) && wait <= .seconds(1200))
            #expect(try await store.takeToken("send:u:bob", limit: limit) == nil)
            #expect(try await store.takeToken("send:u:alice", limit: QuotaLimit(0, per: .seconds(1))) == nil, "0 is off")
        }
    }

    /// A token given back can be taken again; the bucket never holds more than its size.
    @Test(arguments: StoreKind.available)
    func tokensGivenBackAreThereAgainUpToTheBucketsSize(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let limit = QuotaLimit(3, per: .seconds(3600))
            for _ in 0..<3 { #expect(try await store.takeToken("diag:u:alice", limit: limit) == nil) }
            #expect(try await store.takeToken("diag:u:alice", limit: limit) != nil)
            try await store.returnToken("diag:u:alice", limit: limit, cost: 1)
            #expect(try await store.takeToken("diag:u:alice", limit: limit) == nil)
            #expect(try await store.takeToken("diag:u:alice", limit: limit) != nil)
            // Given back more than was ever taken: full, no fuller.
            try await store.returnToken("diag:u:bob", limit: limit, cost: 1)
            try await store.returnToken("diag:u:alice", limit: limit, cost: 10)
            for name in ["alice", "bob"] {
                for _ in 0..<3 { #expect(try await store.takeToken("diag:u:\(name)", limit: limit) == nil) }
                #expect(try await store.takeToken("diag:u:\(name)", limit: limit) != nil)
            }
        }
    }

    @Test(.enabled(if: postgresIsAvailable))
    func replicasOnOnePostgreSQLShareTheirBuckets() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { first in
                try await PostgresStore.withRunning(url: url) { second in
                    let limit = QuotaLimit(10, per: .seconds(3600))
                    let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
                        for index in 0..<30 {
                            let store = index.isMultiple(of: 2) ? first : second
                            group.addTask { try await store.takeToken("thread:all", limit: limit) == nil }
                        }
                        return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                    }
                    #expect(taken == 10)
                }
            }
        }
    }

    /// A window of turns gives its limit, then names the wait until the next window opens
    /// (`window + lateness` after the first turn); each key is a window of its own.
    @Test(arguments: StoreKind.available)
    func aTurnWindowGivesItsLimitThenTheWaitForTheNext(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let (window, lateness) = (Duration.seconds(600), Duration.seconds(30))
            for _ in 0..<3 { #expect(try await store.takeWindowTurn("discord-window:a", limit: 3, window: window, lateness: lateness) == nil) }
            let wait = try #require(try await store.takeWindowTurn("discord-window:a", limit: 3, window: window, lateness: lateness))
            #expect(wait > .seconds(600) && wait <= .seconds(630))
            #expect(try await store.takeWindowTurn("discord-window:b", limit: 3, window: window, lateness: lateness) == nil)
        }
    }

    /// Once the wait a refused turn named has passed, the next window opens with a turn: the
    /// wait is never short of it. (The store's own clock: PostgreSQL's, which replicas share.)
    @Test(arguments: StoreKind.available)
    func aTurnWindowOpensAgainOnceItsWaitHasPassed(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let (window, lateness) = (Duration.seconds(2), Duration.milliseconds(500))
            let take = { try await store.takeWindowTurn("discord-window:c", limit: 1, window: window, lateness: lateness) }
            #expect(try await take() == nil)
            // The window's one turn is given: the next is refused with a wait (unless this machine
            // stalled past the window, when it opens the next one: asked again, then).
            var wait: Duration?
            for _ in 0..<5 where wait == nil { wait = try await take() }
            try await Task.sleep(for: try #require(wait, "a refused turn names its wait"))
            #expect(try await store.takeWindowTurn("discord-window:c", limit: 1, window: window, lateness: lateness) == nil)
        }
    }

    /// Replicas taking turns at once on one PostgreSQL share one window: its limit in all.
    @Test(.enabled(if: postgresIsAvailable))
    func replicasOnOnePostgreSQLShareTheirTurnWindows() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { first in
                try await PostgresStore.withRunning(url: url) { second in
                    let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
                        for index in 0..<30 {
                            let store = index.isMultiple(of: 2) ? first : second
                            group.addTask {
                                try await store.takeWindowTurn("discord-window:forum", limit: 10, window: .seconds(600), lateness: .seconds(1)) == nil
                            }
                        }
                        return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                    }
                    #expect(taken == 10)
                }
            }
        }
    }

    /// The migration that adds `history` fills it in from what rows written before it show.
}

@Suite("SQLite store")
struct SQLiteStoreTests {
    /// A PostgreSQL database a newer ThreadDesk migrated is refused, and left as it was.
    @Test(.enabled(if: postgresIsAvailable))
    func aPostgreSQLDatabaseFromANewerVersionIsRefused() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                try await store.setGlobalValue("kept", to: "yes")
                try await store.client.query("UPDATE schema_version SET version = \(PostgresStore.schemaVersion + 1)")
                await #expect(throws: PostgresStore.SchemaTooNew.self) { try await store.migrate() }
                let version = try await store.client.query("SELECT version FROM schema_version").collect().first?.decode(Int.self)
                #expect(version == PostgresStore.schemaVersion + 1)
                #expect(try await store.globalValue("kept") == "yes")
            }
        }
    }

    @Test func theHistoryMigrationBackfillsEarlierRows() async throws {
        let path = temporaryDatabasePath()
        do {
            let store = try SQLiteStore(path: path)
            for id in ["with-thread", "with-push", "claimed-only", "legacy"] {
                try await store.withUser(UserID(id)!) { $0.record = UserRecord(id: UserID(id)!) }
            }
        }
        // The database as the version before wrote it: no `history` column, no such migration.
        try await rewriteAsEarlierVersion(path) { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v5: what an id has been'")
            try db.execute(sql: "ALTER TABLE users DROP COLUMN history")
            try db.execute(sql: "UPDATE users SET thread_id = '123' WHERE id IN ('with-thread', 'legacy')")
            try db.execute(sql: "UPDATE users SET push_token = 'abcd' WHERE id = 'with-push'")
            try db.execute(sql: "UPDATE users SET token_hash = 'hash-' || id WHERE id IN ('with-thread', 'with-push', 'claimed-only')")
        }
        let store = try SQLiteStore(path: path)
        let history = { (id: String) in try await store.user(UserID(id)!)?.history ?? [] }
        #expect(try await history("with-thread") == [.used, .v1])
        #expect(try await history("with-push") == [.used, .v1])
        #expect(try await history("claimed-only") == [.v1])
        #expect(try await history("legacy") == [.used])
        #expect(try await store.user(UserID("claimed-only")!)?.isUnusedClaim == true)
    }

    /// A backup taken while users are being written is a consistent database that opens as a
    /// store and holds every user written before it began.
    @Test func aBackupUnderLoadRestoresTheSameUsers() async throws {
        let store = try SQLiteStore(path: temporaryDatabasePath())
        for index in 0..<200 {
            try await store.withUser(UserID("before-\(index)")!) { $0.record = UserRecord(id: UserID("before-\(index)")!) }
        }
        let copy = temporaryDatabasePath()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for index in 0..<300 {
                    try await store.withUser(UserID("during-\(index)")!) { $0.record = UserRecord(id: UserID("during-\(index)")!) }
                }
            }
            group.addTask { try store.backup(to: copy) }
            try await group.waitForAll()
        }
        let restored = try SQLiteStore(path: copy)
        for index in 0..<200 { #expect(try await restored.user(UserID("before-\(index)")!) != nil) }
        // Whatever of the writes meanwhile it holds, it holds whole: the users it has are readable.
        #expect(try restored.migrations().allSatisfy(\.applied))
        #expect(throws: SQLiteStore.BackupTargetExists.self) { try store.backup(to: copy) }
    }

    /// A database a newer ThreadDesk migrated is refused, not migrated back or written to.
    @Test func aDatabaseFromANewerVersionIsRefused() async throws {
        let path = temporaryDatabasePath()
        do {
            let store = try SQLiteStore(path: path)
            try await store.setGlobalValue("kept", to: "yes")
        }
        let queue = try DatabaseQueue(path: path)
        try await queue.write { try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')") }
        try queue.close()
        #expect(throws: SQLiteStore.SchemaTooNew.self) { try SQLiteStore(path: path) }
    }

    @Test func survivesReopeningTheFileInWALMode() async throws {
        let path = temporaryDatabasePath()
        let id = UserID("carol")!
        do {
            let store = try SQLiteStore(path: path)
            try await store.withUser(id) { $0.record = UserRecord(id: id) }
        }
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.user(id)?.id == id)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }
}
