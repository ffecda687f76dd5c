import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

private let alice = UserID("profile-alice")!
private let bob = UserID("profile-bob")!
private let beta = AppID("beta")!
private let start = Date(timeIntervalSince1970: 1_800_000_000)

private func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

private func event(_ id: String, _ name: String = "opened", minute: Double) -> ActivityRecord {
    ActivityRecord(id: id, name: name, properties: ["screen": .string("settings"), "count": .integer(Int(minute))], occurredAt: at(minute))
}

/// Users' attributes, their recent activity and article reads: the same on every store.
@Suite("UserProfiles and ArticleReads contract")
struct UserProfilesContract {
    @Test(arguments: StoreKind.available)
    func attributesAreReplacedAndRemovedWhole(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.profile(of: alice) == UserProfile())
            let values: [String: AttributeValue] = [
                "plan": .string("pro \"quoted\" ✓"), "seats": .integer(3), "ratio": .number(0.25), "trial": .bool(true),
                "trial_ends": .date("2027-01-01T00:00:00Z"),
            ]
            try await store.setAttributes(values, of: alice, at: at(1))
            var profile = try await store.profile(of: alice)
            #expect(profile.attributes == values && profile.attributesUpdatedAt == at(1))
            #expect(try await store.profile(of: bob).attributes.isEmpty)
            try await store.setAttributes(["plan": .string("free")], of: alice, at: at(2))
            profile = try await store.profile(of: alice)
            #expect(profile.attributes == ["plan": .string("free")] && profile.attributesUpdatedAt == at(2))
            try await store.setAttributes([:], of: alice, at: at(3))
            profile = try await store.profile(of: alice)
            #expect(profile.attributes.isEmpty && profile.attributesUpdatedAt == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func activityIsKeptOncePerIDAndOnlyTheNewestStay(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await !store.recordActivity(event("e0", minute: 0), of: alice, keep: 4), "no such user: nothing kept")
            for user in [alice, bob] { try await store.withUser(user) { $0.record = UserRecord(id: user) } }
            for minute in 0..<6 { #expect(try await store.recordActivity(event("e\(minute)", minute: Double(minute)), of: alice, keep: 4)) }
            // Sent again (a lost answer): kept once.
            #expect(try await !store.recordActivity(event("e5", minute: 5), of: alice, keep: 4))
            // A late event from a device that was offline: it happened before the newest, so it
            // takes its place by time, and the oldest leave.
            #expect(try await store.recordActivity(event("late", "export_failed", minute: 3.5), of: alice, keep: 4))
            let activity = try await store.profile(of: alice).activity
            #expect(activity.map(\.id) == ["e5", "e4", "late", "e3"])
            #expect(activity[2].name == "export_failed" && activity[2].occurredAt == at(3.5))
            #expect(activity[0].properties == ["screen": .string("settings"), "count": .integer(5)])
            // An id is the app's per user: another user's event of the same id is theirs.
            #expect(try await store.recordActivity(event("e5", minute: 9), of: bob, keep: 4))
            #expect(try await store.profile(of: bob).activity.map(\.id) == ["e5"])
        }
    }

    @Test(arguments: StoreKind.available)
    func aReadCountsOncePerDayAndAMessageSoonAfterMarksIt(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let carol = UserID(app: beta, local: UserID("profile-carol")!)
            #expect(try await !store.recordArticleRead("100", by: carol, at: at(0)), "no such user: nothing counted")
            for user in [alice, bob, carol] { try await store.withUser(user) { $0.record = UserRecord(id: user) } }
            #expect(try await store.recordArticleRead("100", by: alice, at: at(0)))
            #expect(try await !store.recordArticleRead("100", by: alice, at: at(60)))
            #expect(try await store.recordArticleRead("100", by: alice, at: at(24 * 60)))
            #expect(try await store.recordArticleRead("200", by: alice, at: at(24 * 60 + 1)))
            #expect(try await store.recordArticleRead("100", by: bob, at: at(5)))
            #expect(try await store.recordArticleRead("100", by: carol, at: at(5)))
            // Alice wrote five minutes after her second day's reads: those two led to a message.
            try await store.userWroteAfterReads(alice, at: at(24 * 60 + 6), window: 600)
            let totals = try await store.articleReadTotals(app: .default, since: at(-1), limit: 10)
            #expect(totals == [ArticleReadTotal(article: "100", reads: 3, withoutMessage: 2), ArticleReadTotal(article: "200", reads: 1, withoutMessage: 0)])
            #expect(try await store.articleReadTotals(app: .default, since: at(10), limit: 10).map(\.reads) == [1, 1])
            #expect(try await store.articleReadTotals(app: .default, since: at(-1), limit: 1).map(\.article) == ["100"])
            #expect(try await store.articleReadTotals(app: beta, since: at(-1), limit: 10) == [ArticleReadTotal(article: "100", reads: 1, withoutMessage: 1)])
            #expect(try await store.articleReads(of: alice, limit: 10) == [
                ArticleRead(article: "100", readAt: at(0), wroteAfter: false), ArticleRead(article: "100", readAt: at(24 * 60), wroteAfter: true),
                ArticleRead(article: "200", readAt: at(24 * 60 + 1), wroteAfter: true),
            ])
        }
    }

    @Test(arguments: StoreKind.available)
    func erasureRemovesAttributesActivityAndReads(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            for user in [alice, bob] {
                try await store.withUser(user) { $0.record = UserRecord(id: user) }
                try await store.setAttributes(["plan": .string("pro")], of: user, at: at(0))
                try await store.recordActivity(event("e1", minute: 1), of: user, keep: 50)
                _ = try await store.recordArticleRead("100", by: user, at: at(2))
            }
            try await store.eraseUser(alice) { _ in }
            #expect(try await store.profile(of: alice) == UserProfile())
            #expect(try await store.articleReads(of: alice, limit: 10).isEmpty)
            #expect(try await store.profile(of: bob).attributes == ["plan": .string("pro")])
            #expect(try await store.articleReadTotals(app: .default, since: at(-1), limit: 10) == [ArticleReadTotal(article: "100", reads: 1, withoutMessage: 1)])
            // Gone: a read or an event that waited out the erasure keeps nothing; a new Alice reads afresh.
            #expect(try await !store.recordArticleRead("100", by: alice, at: at(3)))
            #expect(try await !store.recordActivity(event("e2", minute: 3), of: alice, keep: 50))
            try await store.withUser(alice) { $0.record = UserRecord(id: alice) }
            #expect(try await store.recordArticleRead("100", by: alice, at: at(3)))
        }
    }
}
