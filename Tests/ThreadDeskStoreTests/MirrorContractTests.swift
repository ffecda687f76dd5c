import DiscordREST
import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

private let owner = UserID("mirror-owner")!
private let thread = Snowflake(1_000_000)

private func message(_ id: UInt64, author: MessageAuthor = .support, visible: Bool = true, content: String? = nil, edited: String? = nil)
    -> MirroredMessage
{
    MirroredMessage(
        id: Snowflake(id), threadID: thread, author: author, authorID: Snowflake(42), authorUsername: "agent", authorName: "Agent",
        type: 0, content: content ?? "message \(id)",
        attachments: [.init(id: Snowflake(id + 1), filename: "a.png", size: 3, contentType: "image/png", url: "u", proxyURL: "p", width: 2, height: 1)],
        replyTo: nil, createdAt: "2026-11-23T10:00:00.000000+00:00", editedAt: edited, visible: visible)
}

/// The conversation mirror's storage, the same on every store.
@Suite("MirrorStore contract")
struct MirrorStoreContract {
    @Test(arguments: StoreKind.available)
    func keepsThreadsAndMessagesWholeAndPagesTheVisibleOnesBothWays(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let state = MirrorThread(
                id: thread, owner: owner, complete: true, newestSeen: Snowflake(60), syncedEpoch: 3,
                syncedAt: Date(timeIntervalSince1970: 1_700_000_000), lastActivity: Date(timeIntervalSince1970: 1_700_000_100))
            try await store.saveMirrorThread(state)
            #expect(try await store.mirrorThread(thread) == state)
            var messages = (1...6).map { message(UInt64($0) * 10) }
            messages[1].visible = false  // 20: a note
            messages[2].deleted = true  // 30
            messages[3].push = .pending(attempts: 2, nextAttempt: Date(timeIntervalSince1970: 1_700_000_050))
            messages[4].partOf = Snowflake(40)
            try await store.saveMirroredMessages(messages)
            #expect(Set(try await store.mirroredMessages(messages.map(\.id))) == Set(messages))

            let newest = try await store.mirrorPage(thread: thread, .before(nil), limit: 2)
            #expect(newest.messages.map(\.id.rawValue) == [50, 60])
            #expect(newest.hasMore)
            let older = try await store.mirrorPage(thread: thread, .before(Snowflake(50)), limit: 5)
            #expect(older.messages.map(\.id.rawValue) == [10, 40])
            #expect(!older.hasMore)
            let forwards = try await store.mirrorPage(thread: thread, .after(Snowflake(10), before: Snowflake(60)), limit: 5)
            #expect(forwards.messages.map(\.id.rawValue) == [40, 50])
            #expect(try await store.mirroredIDs(thread: thread, from: Snowflake(20)).map(\.rawValue) == [20, 40, 50, 60])
            #expect(try await store.mirroredParts(of: Snowflake(40)).map(\.id.rawValue) == [40, 50])
            #expect(try await store.supportMessageCount(thread: thread, after: Snowflake(10)) == 3)
        }
    }

    /// The assistant's answers are kept as its own (a store read back what it wrote) and count as
    /// unread as support's do; hidden ones do not.
    @Test(arguments: StoreKind.available)
    func keepsTheAssistantsAnswersAndCountsThemUnread(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.saveMirrorThread(MirrorThread(id: thread, owner: owner, complete: true))
            var messages = [message(10, author: .user), message(20, author: .assistant), message(30), message(40, author: .assistant)]
            messages[0].authorName = nil
            messages[1].authorName = "Assistant"
            messages[3].visible = false
            try await store.saveMirroredMessages(messages)
            let read = try await store.mirroredMessages(messages.map(\.id)).sorted { $0.id < $1.id }
            #expect(read == messages)
            #expect(read.map(\.author) == [.user, .assistant, .support, .assistant])
            #expect(try await store.mirrorPage(thread: thread, .before(nil), limit: 10).messages.map(\.author) == [.user, .assistant, .support])
            #expect(try await store.supportMessageCount(thread: thread, after: Snowflake(10)) == 2)
            #expect(try await store.supportMessageCount(thread: thread, after: Snowflake(20)) == 1)
        }
    }

    /// Every order of the same facts, each given twice, ends in one state.
    @Test func mergingIsIndependentOfOrderAndRepetition() throws {
        let created = message(10, content: "first")
        let edited = message(10, content: "second", edited: "2026-11-23T10:05:00.000000+00:00")
        let facts: [MirrorFact] = [.message(created), .message(edited), .deleted(Snowflake(10), thread: thread)]
        var results = Set<MirroredMessage>()
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            var state: MirroredMessage?
            for index in order + order { state = MirroredMessage.merge(facts[index], into: state)?.0 ?? state }
            results.insert(try #require(state))
        }
        #expect(results.count == 1)
        #expect(results.first?.deleted == true)

        var state: MirroredMessage?
        for index in [1, 0, 1, 0] { state = MirroredMessage.merge(facts[index], into: state)?.0 ?? state }
        #expect(state?.content == "second")
        #expect(MirroredMessage.merge(.message(created), into: created) == nil)
    }
}

extension MirrorStoreContract {
    @Test(arguments: StoreKind.available)
    func numbersLiveEventsInOrderAndListsAnOwnersChangesAfterAPosition(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let first = try await store.nextEventSequences(3)
            #expect(first.count == 3 && first == first.sorted() && Set(first).count == 3)
            let next = try await store.nextEventSequences(1)
            #expect(next[0] > first[2])
            #expect(try await store.nextEventSequences(0).isEmpty)

            let other = UserID("someone-else")!
            let otherThread = Snowflake(2_000_000)
            try await store.saveMirrorThread(MirrorThread(id: thread, owner: owner, complete: true))
            try await store.saveMirrorThread(MirrorThread(id: otherThread, owner: other, complete: true))
            var a = message(10)
            (a.eventSeq, a.shownSeq) = (first[2], first[0])
            var b = message(20)
            (b.eventSeq, b.shownSeq) = (first[1], first[1])
            let untouched = message(30)  // never numbered: no event
            var foreign = message(40)
            foreign.threadID = otherThread
            (foreign.eventSeq, foreign.shownSeq) = (next[0], next[0])
            try await store.saveMirroredMessages([a, b, untouched, foreign])

            #expect(try await store.mirrorEvents(owner: owner, after: 0, limit: 10).map(\.id.rawValue) == [20, 10])
            #expect(try await store.mirrorEvents(owner: owner, after: first[1], limit: 10).map(\.id.rawValue) == [10])
            #expect(try await store.mirrorEvents(owner: owner, after: 0, limit: 1).map(\.id.rawValue) == [20])
            #expect(try await store.mirrorEvents(owner: owner, after: 0, limit: 10).first?.shownSeq == first[1])
            #expect(try await store.latestEventSequence(owner: owner) == first[2])
            #expect(try await store.latestEventSequence(owner: other) == next[0])
            #expect(try await store.latestEventSequence(owner: UserID("nobody")!) == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func keepsTheLiveStateOfAUser(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(owner) { context in
                var record = UserRecord(id: owner)
                record.lastReadMessageID = "10"
                record.live = LiveState(readSeq: 7, reactionMessageID: "10")
                context.record = record
            }
            let stored = try await store.user(owner)
            #expect(stored?.live == LiveState(readSeq: 7, reactionMessageID: "10"))
            #expect(stored?.lastReadMessageID == "10")
        }
    }
}

@Suite("PushQueue contract")
struct PushQueueContract {
    @Test(arguments: StoreKind.available)
    func findsDuePushesOldestFirstWithTheirOwner(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.saveMirrorThread(MirrorThread(id: thread, owner: owner, complete: true))
            let now = Date()
            var due = message(10)
            due.push = .pending(attempts: 0, nextAttempt: now.addingTimeInterval(-5))
            var later = message(20)
            later.push = .pending(attempts: 1, nextAttempt: now.addingTimeInterval(60))
            var sent = message(30)
            sent.push = .sent
            try await store.saveMirroredMessages([due, later, sent])
            #expect(try await store.duePushes(at: now, limit: 10) == [DuePush(owner: owner, threadID: thread, messageID: Snowflake(10))])
            let next = try #require(try await store.nextPushDue())
            #expect(abs(next.timeIntervalSince(now.addingTimeInterval(-5))) < 0.01)
            let recent = try await store.activeMirrorThreads(since: now.addingTimeInterval(-60))
            #expect(recent.map(\.id) == [thread])
        }
    }
}

@Suite("JobLocks contract")
struct JobLocksContract {
    @Test(arguments: StoreKind.available)
    func runsAJobOnlyOnceAtATime(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let inner = try await store.exclusively("reconcile") {
                try await store.exclusively("reconcile") { "second" }
            }
            #expect(inner == .some(nil))
            #expect(try await store.exclusively("reconcile") { "again" } == "again")
        }
    }
}
