import DiscordREST
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore

private let alice = UserID("drafts-alice")!
private let bob = UserID("drafts-bob")!
private let aliceThread = Snowflake(1_400_000_000_000_000_001)
private let bobThread = Snowflake(1_400_000_000_000_000_002)
private let start = Date(timeIntervalSince1970: 1_800_000_000)

private func draft(_ id: UInt64, owner: UserID = alice, thread: Snowflake = aliceThread, _ state: AssistDraft.State, at seconds: Double = 0)
    -> AssistDraft
{
    AssistDraft(
        id: Snowflake(id), owner: owner, thread: thread, answers: Snowflake(id + 1000), state: state, text: "draft \(id)",
        createdAt: start.addingTimeInterval(seconds))
}

/// The assistant's drafts, the same on every store.
@Suite("DraftStore contract")
struct DraftStoreContract {
    @Test(arguments: StoreKind.available)
    func aDraftRoundTripsWithEveryField(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let full = AssistDraft(
                id: Snowflake(1_400_000_000_000_000_100), owner: UserID(app: AppID("beta")!, local: alice), thread: aliceThread,
                answers: Snowflake(UInt64.max - 1), state: .uncertain, text: "Try **restarting** the app — it's 'quoted' \"twice\" 🙂\nline 2",
                faqIDs: ["faq-1", "faq \"two\"", "ünï"], noteID: Snowflake(1_400_000_000_000_000_101),
                sentMessageID: Snowflake(1_400_000_000_000_000_102), actor: "123456789012345678", interactionID: "interaction-1",
                createdAt: start, updatedAt: start.addingTimeInterval(61.5))
            let bare = draft(1_400_000_000_000_000_200, .drafting)
            try await store.saveDraft(full)
            try await store.saveDraft(bare)
            #expect(try await store.draft(full.id) == full)
            #expect(try await store.draft(bare.id) == bare)
            #expect(bare.faqIDs.isEmpty && bare.noteID == nil && bare.sentMessageID == nil && bare.actor == nil)
            #expect(try await store.draft(Snowflake(1)) == nil)

            // Saving again replaces it whole, optional fields cleared included.
            var changed = full
            (changed.state, changed.text, changed.faqIDs, changed.noteID, changed.sentMessageID) = (.sent, "sent text", [], nil, nil)
            (changed.actor, changed.interactionID, changed.updatedAt) = (nil, nil, start.addingTimeInterval(120))
            try await store.saveDraft(changed)
            #expect(try await store.draft(full.id) == changed)
        }
    }

    @Test(arguments: StoreKind.available)
    func openDraftsAreTheThreadsUnfinishedOnesOldestFirst(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            // One draft per state, saved newest first.
            let states = AssistDraft.State.allCases
            for (index, state) in states.enumerated().reversed() {
                try await store.saveDraft(draft(UInt64(100 + index), state, at: Double(index)))
            }
            try await store.saveDraft(draft(900, owner: bob, thread: bobThread, .posted))
            let open = try await store.openDrafts(thread: aliceThread)
            #expect(open.map(\.state) == [.drafting, .posted, .sending, .uncertain])
            #expect(open.map(\.id.rawValue) == [100, 101, 102, 107])
            #expect(try await store.openDrafts(thread: bobThread).map(\.id.rawValue) == [900])
            #expect(try await store.openDrafts(thread: Snowflake(5)).isEmpty)

            // A draft that moves on leaves the open ones.
            var sent = try #require(open.first { $0.state == .sending })
            sent.state = .sent
            try await store.saveDraft(sent)
            #expect(try await store.openDrafts(thread: aliceThread).map(\.id.rawValue) == [100, 101, 107])
        }
    }

    @Test(arguments: StoreKind.available)
    func draftsBeingSentAreEveryThreadsLeastRecentlyChangedFirst(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.saveDraft(draft(300, .sending, at: 30))
            try await store.saveDraft(draft(301, owner: bob, thread: bobThread, .sending, at: 10))
            try await store.saveDraft(draft(302, .posted, at: 5))
            try await store.saveDraft(draft(303, .uncertain, at: 1))
            try await store.saveDraft(draft(304, .sending, at: 20))
            #expect(try await store.draftsBeingSent(limit: 10).map(\.id.rawValue) == [301, 304, 300])
            #expect(try await store.draftsBeingSent(limit: 2).map(\.id.rawValue) == [301, 304])
        }
    }

    @Test(arguments: StoreKind.available)
    func pruningDeletesOnlyClosedDraftsLastChangedBeforeTheDate(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let states = AssistDraft.State.allCases
            for (index, state) in states.enumerated() {
                var old = draft(UInt64(100 + index), state)
                old.updatedAt = start.addingTimeInterval(10)
                try await store.saveDraft(old)
                var recent = draft(UInt64(200 + index), state)
                recent.updatedAt = start.addingTimeInterval(100)
                try await store.saveDraft(recent)
            }
            let pruned = try await store.pruneDrafts(closedBefore: start.addingTimeInterval(50))
            #expect(pruned == AssistDraft.State.closed.count)
            for (index, state) in states.enumerated() {
                #expect((try await store.draft(Snowflake(UInt64(100 + index))) != nil) == state.isOpen, "\(state)")
                #expect(try await store.draft(Snowflake(UInt64(200 + index))) != nil, "\(state), changed since")
            }
            #expect(try await store.pruneDrafts(closedBefore: start.addingTimeInterval(50)) == 0)
        }
    }

    /// An erasure takes the user's drafts and their ledger rows; another user's stay.
    @Test(arguments: StoreKind.available)
    func anErasureTakesTheUsersDraftsAndUsage(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            for id in [alice, bob] { try await store.withUser(id) { $0.record = UserRecord(id: id) } }
            try await store.saveDraft(draft(10, owner: alice, .posted))
            try await store.saveDraft(draft(11, owner: alice, .sent))
            try await store.saveDraft(draft(20, owner: bob, thread: bobThread, .posted))
            let app = AssistKey.app(.default)
            for id in [alice, bob] {
                #expect(try await store.reserveAssistTokens(50, day: "2026-11-28", limits: [app: 0, AssistKey.user(id): 100]))
            }
            #expect(try await store.eraseUser(alice) { _ in })

            #expect(try await store.draft(Snowflake(10)) == nil)
            #expect(try await store.draft(Snowflake(11)) == nil)
            #expect(try await store.openDrafts(thread: aliceThread).isEmpty)
            #expect(try await store.assistTokensUsed(AssistKey.user(alice), day: "2026-11-28") == 0)
            #expect(try await store.draft(Snowflake(20)) != nil)
            #expect(try await store.assistTokensUsed(AssistKey.user(bob), day: "2026-11-28") == 50)
            #expect(try await store.assistTokensUsed(app, day: "2026-11-28") == 100, "the app's spending is not the user's")
        }
    }
}
