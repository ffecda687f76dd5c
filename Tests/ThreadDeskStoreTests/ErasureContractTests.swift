import DiscordREST
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskStore
import ThreadDeskWire

private let alice = UserID("erase-alice")!
private let bob = UserID("erase-bob")!
private let aliceThread = Snowflake(1_300_000_000_000_000_001)
private let aliceEarlierThread = Snowflake(1_300_000_000_000_000_002)
private let bobThread = Snowflake(1_300_000_000_000_000_003)
private let aliceToken = UserToken.hash("alice-secret-token")
private let alicePushToken = String(repeating: "a1", count: 32)

extension StoreKind {
    /// A fresh store of this kind, and a scan of every table of its database (nil for memory).
    func withScan<T: Sendable>(_ body: (any UserStore, _ scan: ([String]) async throws -> RowScan?) async throws -> T) async throws -> T {
        switch self {
        case .memory:
            return try await body(MemoryStore()) { _ in nil }
        case .sqlite:
            let path = temporaryDatabasePath()
            return try await body(try SQLiteStore(path: path)) { needles in try scanSQLite(path, for: needles) }
        case .postgres:
            return try await withFreshPostgresSchema { url in
                try await PostgresStore.withRunning(url: url) { store in
                    try await body(store) { needles in try await scanPostgres(url, for: needles) }
                }
            }
        }
    }
}

private func message(_ id: UInt64, thread: Snowflake, visible: Bool = true, author: MessageAuthor = .user) -> MirroredMessage {
    MirroredMessage(
        id: Snowflake(id), threadID: thread, author: author, authorID: Snowflake(42), authorUsername: "bot", authorName: nil, type: 0,
        content: "text \(id)", attachments: [], replyTo: nil, createdAt: "2026-11-23T10:00:00.000000+00:00", editedAt: nil,
        visible: visible, push: author == .support ? .pending(attempts: 1, nextAttempt: Date()) : .none)
}

/// Fills the store with everything ThreadDesk keeps about Alice (and a little about Bob).
private func populate(_ store: any UserStore, aliceActive: Date = Date(), bobActive: Date = Date()) async throws {
    try await store.withUser(alice, idempotencyKey: "send-1") { context in
        var record = UserRecord(id: alice, now: aliceActive)
        record.addToken(hash: UserToken.hash("alice-earlier-token"))
        record.addToken(hash: aliceToken)
        record.threadID = aliceThread.description
        record.pushToken = alicePushToken
        record.pushEnvironment = .development
        record.installation = InstallationInfo(appVersion: "1.0", deviceModel: "iPhone-of-alice")
        record.lastReadMessageID = "1300000000000000101"
        context.record = record
        context.result = IdempotentResult(fingerprint: "f", messageIDs: ["1300000000000000101"])
    }
    try await store.withUser(bob) { context in context.record = UserRecord(id: bob, now: bobActive) }
    try await store.saveMirrorThread(MirrorThread(id: aliceEarlierThread, owner: alice, complete: true, lastActivity: aliceActive, gone: true))
    try await store.saveMirrorThread(MirrorThread(id: aliceThread, owner: alice, complete: true, lastActivity: aliceActive))
    try await store.saveMirrorThread(MirrorThread(id: bobThread, owner: bob, complete: true, lastActivity: bobActive))
    try await store.saveMirroredMessages([
        message(1_300_000_000_000_000_050, thread: aliceEarlierThread),
        message(1_300_000_000_000_000_101, thread: aliceThread),
        message(1_300_000_000_000_000_102, thread: aliceThread, visible: false, author: .support),
        message(1_300_000_000_000_000_103, thread: aliceThread, author: .support),
        message(1_300_000_000_000_000_201, thread: bobThread),
    ])
    try await store.setGlobalValue("unrecorded-thread/\(alice.rawValue)", to: "attempt")
    try await store.setGlobalValue("thread-status/\(aliceThread)", to: "needs-reply")
    try await store.setGlobalValue("thread-status/\(bobThread)", to: "needs-reply")
}

/// What identifies Alice anywhere in a database.
private let aliceNeedles = [
    alice.rawValue, aliceToken, UserToken.hash("alice-earlier-token"), alicePushToken, aliceThread.description,
    aliceEarlierThread.description, "1300000000000000050", "1300000000000000101", "1300000000000000102", "1300000000000000103",
    "iPhone-of-alice",
]

@Suite("UserErasure contract")
struct UserErasureContract {
    /// An erasure leaves no row of the user in any table (found by reading every column of every
    /// table the schema has), frees the id, and keeps everyone else's.
    @Test(arguments: StoreKind.available)
    func erasingAUserLeavesNoRowOfTheirsAnywhere(kind: StoreKind) async throws {
        try await kind.withScan { store, scan in
            try await populate(store)
            let limit = QuotaLimit(1, per: .seconds(3600))
            #expect(try await store.takeToken("send:u:\(alice.rawValue)", limit: limit) == nil)
            #expect(try await store.takeToken("send:u:\(alice.rawValue)", limit: limit) != nil, "the bucket is empty")
            #expect(try await store.takeToken("send:u:\(bob.rawValue)", limit: limit) == nil)
            // The assistant's drafts for each, and what each spent on it.
            for (id, owner, thread, answers) in [(901, alice, aliceThread, 101), (902, bob, bobThread, 201)] as [(UInt64, UserID, Snowflake, UInt64)] {
                try await store.saveDraft(
                    AssistDraft(
                        id: Snowflake(1_300_000_000_000_000_000 + id), owner: owner, thread: thread,
                        answers: Snowflake(1_300_000_000_000_000_000 + answers), state: .posted, text: "a drafted answer", createdAt: Date()))
                #expect(try await store.reserveAssistTokens(40, day: "2026-11-28", limits: [AssistKey.app(.default): 0, AssistKey.user(owner): 100]))
            }
            if let before = try await scan(aliceNeedles) {
                #expect(before.mentions["users.id"] == 1 && before.mentions["mirror_messages.thread_id"] == 4, "\(before)")
                #expect(before.mentions["assist_drafts.owner"] == 1 && before.mentions["assist_usage.key"] == 1, "\(before)")
            }

            let erased = try await store.eraseUser(alice) { context in
                #expect(context.record?.pushToken == alicePushToken)
                #expect(context.threadIDs == [aliceThread, aliceEarlierThread], "the current thread first")
                context.globalKeys = ["unrecorded-thread/\(alice.rawValue)"] + context.threadIDs.map { "thread-status/\($0)" }
            }
            #expect(erased)

            #expect(try await store.user(alice) == nil)
            #expect(try await store.user(forTokenHash: aliceToken) == nil)
            #expect(try await store.userID(forThread: aliceThread.description) == nil)
            #expect(try await store.mirrorThread(aliceThread) == nil)
            #expect(try await store.mirrorThread(aliceEarlierThread) == nil)
            #expect(try await store.conversation(of: alice, after: nil, limit: 10).messages.isEmpty)
            #expect(try await store.duePushes(at: Date().addingTimeInterval(60), limit: 10).isEmpty)
            #expect(try await store.globalValue("unrecorded-thread/\(alice.rawValue)") == nil)
            #expect(try await store.globalValue("thread-status/\(aliceThread)") == nil)
            let kept = try await store.withUser(alice, idempotencyKey: "send-1") { context in
                #expect(context.record == nil, "the id is free")
                return context.keptResult
            }
            #expect(kept == nil)

            // Bob keeps everything.
            #expect(try await store.user(bob) != nil)
            #expect(try await store.mirrorThread(bobThread) != nil)
            #expect(try await store.conversation(of: bob, after: nil, limit: 10).messages.count == 1)
            #expect(try await store.globalValue("thread-status/\(bobThread)") == "needs-reply")
            #expect(try await store.takeToken("send:u:\(bob.rawValue)", limit: limit) != nil, "Bob's bucket is still empty")
            #expect(try await store.draft(Snowflake(1_300_000_000_000_000_901)) == nil)
            #expect(try await store.assistTokensUsed(AssistKey.user(alice), day: "2026-11-28") == 0)
            #expect(try await store.openDrafts(thread: bobThread).count == 1, "Bob's draft stays")
            #expect(try await store.assistTokensUsed(AssistKey.user(bob), day: "2026-11-28") == 40)

            if let after = try await scan(aliceNeedles) {
                #expect(after.mentions.isEmpty, "rows left: \(after)")
                #expect(
                    after.tables.isSuperset(of: [
                        "users", "idempotency", "global_values", "mirror_threads", "mirror_messages", "assist_drafts", "assist_usage",
                    ]))
                let bobs = try #require(try await scan([bob.rawValue, bobThread.description]))
                #expect(bobs.mentions["users.id"] == 1 && bobs.mentions["mirror_messages.thread_id"] == 1, "the scan finds what is there")
                #expect(bobs.mentions["assist_drafts.owner"] == 1 && bobs.mentions["assist_usage.key"] == 1, "\(bobs)")
            }

            // (After the scan: taking a token makes a bucket.)
            #expect(try await store.takeToken("send:u:\(alice.rawValue)", limit: limit) == nil, "a bucket of the user's goes with them")

            let again = try await store.eraseUser(alice) { context in
                #expect(context.record == nil && context.threads.isEmpty)
            }
            #expect(!again, "a second erasure finds nothing")
        }
    }

    /// Ids may contain `:`: erasing `abc` must not refill the buckets of `x:u:abc`, whose keys
    /// end with `:u:abc` too; every bucket kind of the erased user's goes.
    @Test(arguments: StoreKind.available)
    func anErasureTakesOnlyTheUsersOwnBuckets(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let erased = UserID("abc")!
            let other = UserID("x:u:abc")!
            try await store.withUser(erased) { $0.record = UserRecord(id: erased) }
            try await store.withUser(other) { $0.record = UserRecord(id: other) }
            let limit = QuotaLimit(1, per: .seconds(3600))
            for quota in UserQuota.allCases {
                for id in [erased, other] { #expect(try await store.takeToken(quota.key(id), limit: limit, cost: 1) == nil) }
            }
            #expect(try await store.eraseUser(erased) { _ in })
            for quota in UserQuota.allCases {
                #expect(try await store.takeToken(quota.key(other), limit: limit, cost: 1) != nil, "\(quota) of \(other) stays spent")
                #expect(try await store.takeToken(quota.key(erased), limit: limit, cost: 1) == nil, "\(quota) of \(erased) went with them")
            }
        }
    }

    /// When the work before the erasure fails (Discord refused), nothing is erased.
    @Test(arguments: StoreKind.available)
    func aFailedPreparationErasesNothing(kind: StoreKind) async throws {
        struct Refused: Error {}
        try await kind.with { (store: any UserStore) async throws in
            try await populate(store)
            await #expect(throws: Refused.self) {
                try await store.eraseUser(alice) { context in
                    context.globalKeys = ["thread-status/\(aliceThread)"]
                    throw Refused()
                }
            }
            #expect(try await store.user(alice)?.pushToken == alicePushToken)
            #expect(try await store.conversation(of: alice, after: nil, limit: 10).messages.count == 3)
            #expect(try await store.globalValue("thread-status/\(aliceThread)") == "needs-reply")
            // The lock was let go: the user can be taken again.
            try await store.withUser(alice) { context in #expect(context.record != nil) }
        }
    }

    /// Inactive means both the record and every thread of the user have been quiet since the date.
    @Test(arguments: StoreKind.available)
    func inactiveUsersAreThoseQuietEverywhere(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let yearAgo = now.addingTimeInterval(-400 * 86_400)
            try await populate(store, aliceActive: yearAgo, bobActive: yearAgo)
            // Bob's record is old, but support answered in his thread yesterday.
            try await store.saveMirrorThread(MirrorThread(id: bobThread, owner: bob, complete: true, lastActivity: now.addingTimeInterval(-86_400)))
            let carol = UserID("erase-carol")!
            try await store.withUser(carol) { $0.record = UserRecord(id: carol, now: now) }
            let dave = UserID("erase-dave")!
            try await store.withUser(dave) { $0.record = UserRecord(id: dave, now: yearAgo.addingTimeInterval(-86_400)) }

            let cutoff = now.addingTimeInterval(-365 * 86_400)
            let inactive = try await store.inactiveUsers(before: cutoff, limit: 10)
            #expect(inactive.map(\.id) == [dave, alice])
            #expect(abs(try #require(inactive.last).lastActivity.timeIntervalSince(yearAgo)) < 1)
            #expect(try await store.inactiveUsers(before: cutoff, limit: 1).map(\.id) == [dave])
            #expect(try await store.inactiveUsers(before: yearAgo.addingTimeInterval(-2 * 86_400), limit: 10).isEmpty)
        }
    }

    /// Each app's users, in pages: the default app's are the keys without an app part.
    @Test(arguments: StoreKind.available)
    func usersAreListedByApp(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let beta = AppID("beta")!
            let locals = ["a:1", "b@x", "c.d", "z"].map { UserID($0)! }
            for local in locals {
                for id in [local, UserID(app: beta, local: local), UserID(app: AppID("beta-2")!, local: local)] {
                    try await store.withUser(id) { $0.record = UserRecord(id: id, now: Date()) }
                }
            }
            #expect(try await store.users(of: .default, after: nil, limit: 10) == locals)
            let first = try await store.users(of: beta, after: nil, limit: 3)
            #expect(first == locals.prefix(3).map { UserID(app: beta, local: $0) })
            #expect(try await store.users(of: beta, after: first.last, limit: 3) == [UserID(app: beta, local: locals[3])])
            #expect(try await store.users(of: AppID("gamma")!, after: nil, limit: 3).isEmpty)
        }
    }

    /// The whole conversation of a user, every thread of theirs, visible messages only, in pages.
    @Test(arguments: StoreKind.available)
    func theConversationSpansEveryThreadOfTheUser(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await populate(store)
            let first = try await store.conversation(of: alice, after: nil, limit: 2)
            #expect(first.messages.map(\.id.rawValue) == [1_300_000_000_000_000_050, 1_300_000_000_000_000_101])
            #expect(first.hasMore)
            let rest = try await store.conversation(of: alice, after: first.messages.last?.id, limit: 2)
            #expect(rest.messages.map(\.id.rawValue) == [1_300_000_000_000_000_103])
            #expect(!rest.hasMore)
        }
    }
}

/// `threaddesk admin user delete` is another process on the same SQLite file: a request of the
/// server under way for that user when it erases must not write the user back.
@Suite("SQLite erasure beside a running server")
struct SQLiteErasureBesideAServer {
    @Test func aRequestUnderWayDoesNotBringAnErasedUserBack() async throws {
        let path = temporaryDatabasePath()
        let server = try SQLiteStore(path: path)
        let admin = try SQLiteStore(path: path)
        let id = UserID("erased-meanwhile")!
        try await server.withUser(id) { $0.record = UserRecord(id: id) }
        try await server.withUser(id) { context in
            // The admin's erasure lands while this request runs (its own process, its own lock).
            let erased = try await admin.eraseUser(id) { _ in }
            #expect(erased)
            context.record?.lastReadMessageID = "3"
            context.record?.pushToken = "ab"
        }
        #expect(try await server.user(id) == nil)
        #expect(try await admin.user(id) == nil)
        // A new user under that id is written as any new user.
        try await server.withUser(id) { $0.record = UserRecord(id: id) }
        #expect(try await server.user(id) != nil)
    }
}
