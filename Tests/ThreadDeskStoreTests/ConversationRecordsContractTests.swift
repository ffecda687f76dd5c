import DiscordREST
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore

private let alice = UserID("conv-alice")!
private let bob = UserID("conv-bob")!
private let beta = AppID("beta")!
private let start = Date(timeIntervalSince1970: 1_800_000_000)
private let thread = Snowflake(4242)

private func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

/// Conversations, their waits, closes, ratings and the totals support's numbers are made of: the
/// same on every store.
@Suite("ConversationRecords contract")
struct ConversationRecordsContract {
    @Test(arguments: StoreKind.available)
    func aConversationOpensWaitsIsAnsweredAndCloses(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let first = try await store.conversationUserWrote(alice, thread: thread, at: at(0))
            #expect(first.opened && first.cancelledClose == nil)
            #expect(first.conversation.waitingSince == at(0) && first.conversation.openedAt == at(0) && first.conversation.thread == thread)
            // Another message while waiting: the same conversation, the wait from the first.
            let second = try await store.conversationUserWrote(alice, thread: nil, at: at(5))
            #expect(!second.opened && second.conversation.id == first.conversation.id)
            #expect(second.conversation.waitingSince == at(0) && second.conversation.lastUserAt == at(5) && second.conversation.thread == thread)
            // An automatic answer ends nothing.
            let automatic = try #require(try await store.conversationSupportWrote(alice, thread: thread, at: at(6), byAgent: false))
            #expect(automatic.waitingSince == at(0) && automatic.firstResponseAt == nil)
            // An agent's answer ends the wait and is the first response; a second one is not.
            let answered = try #require(
                try await store.conversationSupportWrote(alice, thread: thread, at: at(30), byAgent: true, responseSeconds: { opened in
                    at(30).timeIntervalSince(opened) / 2
                }))
            #expect(answered.waitingSince == nil && answered.firstResponseAt == at(30) && answered.lastSupportAt == at(30))
            // The support time to the first answer, as the caller counts it (half, here), kept once.
            #expect(answered.responseSeconds == 900)
            let again = try #require(try await store.conversationSupportWrote(alice, thread: thread, at: at(40), byAgent: true))
            #expect(again.firstResponseAt == at(30) && again.lastSupportAt == at(40) && again.responseSeconds == 900)
            // The close asks for a rating (an agent answered); a second close finds nothing open.
            let closed = try #require(try await store.closeConversation(alice, at: at(50), by: .agent, dueBy: nil))
            #expect(closed.closedAt == at(50) && closed.closedBy == .agent && closed.ratingRequestedAt == at(50) && !closed.isOpen)
            #expect(try await store.closeConversation(alice, at: at(51), by: .agent, dueBy: nil) == nil)
            #expect(try await store.conversationSupportWrote(alice, thread: thread, at: at(52), byAgent: true) == nil)
            // The user's next message is a new conversation.
            let next = try await store.conversationUserWrote(alice, thread: thread, at: at(60))
            #expect(next.opened && next.conversation.id != first.conversation.id)
            #expect(try await store.latestConversation(of: alice)?.id == next.conversation.id)
            #expect(try await store.latestConversation(of: bob) == nil)
            // Unanswered, a close asks for no rating.
            let unanswered = try #require(try await store.closeConversation(alice, at: at(70), by: .auto, dueBy: nil))
            #expect(unanswered.ratingRequestedAt == nil && unanswered.closedBy == .auto)
        }
    }

    @Test(arguments: StoreKind.available)
    func aScheduledCloseIsDueCancelledByTheUserAndClosedOnlyWhenDue(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.scheduleConversationClose(alice, at: at(120)) == nil)
            _ = try await store.conversationUserWrote(alice, thread: thread, at: at(0))
            _ = try await store.conversationSupportWrote(alice, thread: thread, at: at(10), byAgent: true)
            let scheduled = try #require(try await store.scheduleConversationClose(alice, at: at(120)))
            #expect(scheduled.closeDueAt == at(120))
            #expect(try await store.dueConversationCloses(at: at(119), limit: 10).isEmpty)
            #expect(try await store.dueConversationCloses(at: at(120), limit: 10).map(\.id) == [scheduled.id])
            #expect(try await store.conversationWorkDates().closeDue == at(120))
            // The timer's close before it is due does nothing.
            #expect(try await store.closeConversation(alice, at: at(100), by: .scheduled, dueBy: at(100)) == nil)
            // The user writes: cancelled, and said so.
            let write = try await store.conversationUserWrote(alice, thread: thread, at: at(110))
            #expect(write.cancelledClose == at(120) && write.conversation.closeDueAt == nil)
            #expect(try await store.dueConversationCloses(at: at(200), limit: 10).isEmpty)
            #expect(try await store.closeConversation(alice, at: at(200), by: .scheduled, dueBy: at(200)) == nil)
            // Scheduled again and due: closed by the timer.
            _ = try await store.scheduleConversationClose(alice, at: at(300))
            let closed = try #require(try await store.closeConversation(alice, at: at(300), by: .scheduled, dueBy: at(300)))
            #expect(closed.closedBy == .scheduled && closed.closeDueAt == nil)
            #expect(try await store.conversationWorkDates().closeDue == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aWaitIsRemindedOnceAndAnIdleAnswerIsFound(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let conversation = try await store.conversationUserWrote(alice, thread: thread, at: at(0)).conversation
            _ = try await store.conversationUserWrote(bob, thread: Snowflake(7), at: at(10))
            #expect(try await store.unremindedWaits(startedBefore: at(5), limit: 10).map(\.owner) == [alice])
            #expect(try await store.unremindedWaits(startedBefore: at(11), limit: 10).map(\.owner) == [alice, bob])
            #expect(try await store.conversationWorkDates().oldestUnremindedWait == at(0))
            // Once per wait, whichever replica comes first.
            #expect(try await store.markConversationReminded(conversation.id, waitingSince: at(0), at: at(60)))
            #expect(try await !store.markConversationReminded(conversation.id, waitingSince: at(0), at: at(61)))
            #expect(try await store.unremindedWaits(startedBefore: at(100), limit: 10).map(\.owner) == [bob])
            // A reminder that could not be posted is taken back.
            try await store.forgetConversationReminder(conversation.id, at: at(60))
            #expect(try await store.markConversationReminded(conversation.id, waitingSince: at(0), at: at(62)))
            // A wait that ended is not reminded; the next wait is.
            _ = try await store.conversationSupportWrote(alice, thread: thread, at: at(70), byAgent: true)
            #expect(try await !store.markConversationReminded(conversation.id, waitingSince: at(0), at: at(71)))
            #expect(try await store.idleAnsweredConversations(answeredBefore: at(71), limit: 10).map(\.owner) == [alice])
            #expect(try await store.idleAnsweredConversations(answeredBefore: at(70), limit: 10).isEmpty)
            #expect(try await store.conversationWorkDates().oldestIdleAnswer == at(70))
            let waiting = try await store.conversationUserWrote(alice, thread: thread, at: at(80)).conversation
            #expect(waiting.remindedAt == nil && waiting.reminders == 1 && waiting.waitingSince == at(80))
            #expect(try await store.idleAnsweredConversations(answeredBefore: at(200), limit: 10).isEmpty)
            #expect(try await store.markConversationReminded(conversation.id, waitingSince: at(80), at: at(200)))
            #expect(try await store.latestConversation(of: alice)?.reminders == 2)
        }
    }

    @Test(arguments: StoreKind.available)
    func aRatingIsGivenOnceOnlyWhenAsked(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let conversation = try await store.conversationUserWrote(alice, thread: thread, at: at(0)).conversation
            #expect(try await store.rateConversation(conversation.id, owner: alice, score: 5, comment: nil, at: at(1)) == .notRequested)
            _ = try await store.conversationSupportWrote(alice, thread: thread, at: at(10), byAgent: true)
            _ = try await store.closeConversation(alice, at: at(20), by: .agent, dueBy: nil)
            // Not bob's to rate.
            #expect(try await store.rateConversation(conversation.id, owner: bob, score: 1, comment: nil, at: at(21)) == .notRequested)
            guard case .rated(let rated) = try await store.rateConversation(conversation.id, owner: alice, score: 4, comment: "quick ✓", at: at(22))
            else { Issue.record("not rated"); return }
            #expect(rated.rating == ConversationRating(score: 4, comment: "quick ✓", ratedAt: at(22)))
            guard case .alreadyRated(let kept) = try await store.rateConversation(conversation.id, owner: alice, score: 1, comment: nil, at: at(23))
            else { Issue.record("rated twice"); return }
            #expect(kept.rating?.score == 4)
            // A reopened conversation asks no more (and an erased user leaves nothing).
            _ = try await store.conversationUserWrote(bob, thread: Snowflake(7), at: at(0))
            _ = try await store.conversationSupportWrote(bob, thread: Snowflake(7), at: at(1), byAgent: true)
            let closed = try #require(try await store.closeConversation(bob, at: at(2), by: .agent, dueBy: nil))
            let reopened = try #require(try await store.reopenConversation(bob, at: at(3)))
            #expect(reopened.id == closed.id && reopened.isOpen && reopened.ratingRequestedAt == nil && reopened.waitingSince == at(3))
            #expect(try await store.reopenConversation(bob, at: at(4)) == nil)
            #expect(try await store.rateConversation(closed.id, owner: bob, score: 5, comment: nil, at: at(5)) == .notRequested)
            try await store.eraseUser(bob) { _ in }
            #expect(try await store.latestConversation(of: bob) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func totalsCountTheWindowAndTheAppOnly(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let gamma = UserID(app: beta, local: UserID("conv-gamma")!)
            // Alice: answered after 30 min, rated 5, closed after 60 min. Bob: answered after 10 min,
            // rated 3, closed after 20 min. Dana: waiting since minute 40. Eve: opened before the window.
            let dana = UserID("conv-dana")!
            let eve = UserID("conv-eve")!
            _ = try await store.conversationUserWrote(eve, thread: Snowflake(9), at: at(-200))
            for (user, answer, close, score) in [(alice, 30.0, 60.0, 5), (bob, 10.0, 20.0, 3)] {
                let conversation = try await store.conversationUserWrote(user, thread: Snowflake(1), at: at(0)).conversation
                _ = try await store.conversationSupportWrote(user, thread: nil, at: at(answer), byAgent: true)
                _ = try await store.closeConversation(user, at: at(close), by: .agent, dueBy: nil)
                _ = try await store.rateConversation(conversation.id, owner: user, score: score, comment: nil, at: at(close + 1))
            }
            let waiting = try await store.conversationUserWrote(dana, thread: Snowflake(2), at: at(40)).conversation
            _ = try await store.markConversationReminded(waiting.id, waitingSince: at(40), at: at(50))
            _ = try await store.conversationUserWrote(gamma, thread: Snowflake(3), at: at(1))
            let totals = try await store.conversationTotals(app: .default, since: at(-1), until: at(100))
            #expect(totals.opened == 3 && totals.answered == 2 && totals.closed == 2 && totals.reminders == 1)
            #expect(totals.waitingNow == 2 && totals.longestWaitSince == at(-200))
            #expect(totals.ratings == 2 && totals.ratingSum == 8 && totals.goodRatings == 1)
            #expect(totals.responseSeconds == [600, 1800])
            #expect(totals.closeSeconds == [1200, 3600])
            let other = try await store.conversationTotals(app: beta, since: at(-1), until: at(100))
            #expect(other.opened == 1 && other.waitingNow == 1 && other.ratings == 0 && other.responseSeconds.isEmpty)
            let empty = try await store.conversationTotals(app: .default, since: at(1000), until: at(2000))
            #expect(empty.opened == 0 && empty.ratings == 0 && empty.closeSeconds.isEmpty && empty.waitingNow == 2)
        }
    }
}
