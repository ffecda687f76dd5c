import DiscordREST
import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

private let alice = UserID("outbox-alice")!
private let bob = UserID("outbox-bob")!
private let start = Date(timeIntervalSince1970: 1_800_000_000)

private func item(_ id: UInt64, _ owner: UserID, at seconds: Double = 0, files: [OutboxItem.File] = []) -> OutboxItem {
    OutboxItem(
        id: Snowflake(id), owner: owner, content: "message \(id)", files: files, idempotencyKey: "key-\(id)",
        acceptedAt: start.addingTimeInterval(seconds))
}

private struct Refused: Error {}

/// The outbox's storage, the same on every store: items kept with the transaction that accepts
/// them, each user's queue in order behind its first waiting item, one holder per queue.
@Suite("OutboxStore contract")
struct OutboxStoreContract {
    @Test(arguments: StoreKind.available)
    func itemsAreKeptWithTheAcceptingTransactionOnlyWhenItReturns(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let screenshot = OutboxItem.File(filename: "a.png", contentType: "image/png", bytes: Data([0, 1, 2, 255]))
            let report = OutboxItem.File(filename: "diagnostics.json", contentType: nil, bytes: Data("{}".utf8))
            var first = item(10, alice, files: [screenshot, report])
            first.suggestionID = "42"
            // The accepting send's trace, continued by the delivery.
            first.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let second = item(20, alice, at: 1)
            try await store.withUser(alice, idempotencyKey: "k") { context in
                context.record = UserRecord(id: alice, now: start)
                context.enqueued = [second, first]
            }
            #expect(try await store.outbox(of: alice) == [first, second])
            #expect(try await store.outboxItem(Snowflake(10)) == first)
            #expect(try await store.outboxItem(Snowflake(11)) == nil)
            // A request that fails accepted nothing, whatever it had put in.
            await #expect(throws: Refused.self) {
                try await store.withUser(alice, idempotencyKey: "k2") { context in
                    context.enqueued = [item(30, alice, at: 2)]
                    throw Refused()
                }
            }
            // The same id twice (a retried commit) keeps the first.
            try await store.withUser(alice, idempotencyKey: nil) { context in
                var again = item(20, alice, at: 1)
                again.content = "changed"
                context.enqueued = [again]
            }
            #expect(try await store.outbox(of: alice).map(\.id.rawValue) == [10, 20])
            #expect(try await store.outbox(of: alice)[1].content == "message 20")
            let usage = try await store.outboxUsage(of: alice)
            #expect(usage == OutboxUsage(count: 2, bytes: first.size + second.size, oldest: start))
            #expect(try await store.outboxUsage(of: bob) == OutboxUsage())
            #expect(try await store.outboxUsage(of: nil).count == 2)
            // A failed item still takes room (its files wait for a retry or a delete), but the
            // oldest wait is the oldest still queued.
            var refused = first
            refused.failure = DeliveryFailure(code: "50035", message: "Invalid Form Body")
            #expect(try await store.updateOutboxItem(refused, fence: nil))
            #expect(
                try await store.outboxUsage(of: alice)
                    == OutboxUsage(count: 2, bytes: first.size + second.size, oldest: second.acceptedAt, failed: 1, failedBytes: first.size))
        }
    }

    /// A failed item's files are listed (the owner's, or those refused before a moment) and let
    /// go on their own: its text stays, and so does a waiting item's files.
    @Test(arguments: StoreKind.available)
    func aFailedItemsFilesAreLetGoAndItsTextKept(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let file = OutboxItem.File(filename: "a.png", contentType: "image/png", bytes: Data(repeating: 7, count: 100))
            try await store.withUser(alice, idempotencyKey: nil) { context in
                context.enqueued = [item(10, alice, files: [file, file]), item(20, alice, at: 1, files: [file]), item(30, alice, at: 2, files: [file])]
            }
            try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [item(40, bob, at: 3, files: [file])] }
            for (id, failedAt) in [(10, 100.0), (20, 200), (40, 50)] {
                var refused = try #require(try await store.outboxItem(Snowflake(UInt64(id))))
                refused.failure = DeliveryFailure(code: "40005", message: "Request entity too large")
                refused.nextAttempt = start.addingTimeInterval(failedAt)
                try await store.updateOutboxItem(refused, fence: nil)
            }
            let text = "message 10".utf8.count
            #expect(try await store.outboxUsage(of: alice).failedBytes == 2 * text + 300)
            #expect(try await store.outboxUsage(of: alice).queuedBytes == text + 100)
            #expect(
                try await store.failedOutboxFiles(of: alice, failedBefore: nil, limit: 10)
                    == [FailedOutboxFiles(id: Snowflake(10), owner: alice, bytes: 200), FailedOutboxFiles(id: Snowflake(20), owner: alice, bytes: 100)])
            #expect(try await store.failedOutboxFiles(of: nil, failedBefore: start.addingTimeInterval(150), limit: 10).map(\.id) == [Snowflake(10), Snowflake(40)])
            #expect(try await store.failedOutboxFiles(of: nil, failedBefore: nil, limit: 1).map(\.id) == [Snowflake(10)])

            #expect(try await store.dropFailedOutboxFiles(Snowflake(10)))
            #expect(try await !store.dropFailedOutboxFiles(Snowflake(10)), "nothing left to let go")
            #expect(try await !store.dropFailedOutboxFiles(Snowflake(30)), "a waiting item keeps its files")
            let kept = try #require(try await store.outboxItem(Snowflake(10)))
            #expect(kept.files.isEmpty && kept.content == "message 10" && kept.failure != nil)
            #expect(try await store.outboxItem(Snowflake(30))?.files == [file])
            #expect(try await store.outboxUsage(of: alice).failedBytes == 2 * text + 100)
            #expect(try await store.failedOutboxFiles(of: alice, failedBefore: nil, limit: 10).map(\.id) == [Snowflake(20)])
        }
    }

    @Test(arguments: StoreKind.available)
    func eachUsersQueueIsDueByItsFirstWaitingItem(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice), item(30, alice, at: 2)] }
            try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [item(20, bob, at: 1), item(40, bob, at: 3)] }
            let now = start.addingTimeInterval(10)
            #expect(try await store.outboxOwnersDue(at: now, limit: 10) == [alice, bob])
            #expect(try await store.outboxOwnersDue(at: now, limit: 1) == [alice])
            #expect(try await store.nextOutboxDue() == start)
            // Alice's first item backs off: her later item waits behind it, however long due.
            var backingOff = try #require(try await store.outboxItem(Snowflake(10)))
            backingOff.attempts = 1
            backingOff.nextAttempt = start.addingTimeInterval(60)
            try await store.updateOutboxItem(backingOff)
            #expect(try await store.outboxOwnersDue(at: now, limit: 10) == [bob])
            #expect(try await store.nextOutboxDue() == start.addingTimeInterval(1))
            #expect(try await store.outboxOwnersDue(at: start.addingTimeInterval(60), limit: 10) == [alice, bob])
            // Refused for good: the next one leads.
            backingOff.failure = DeliveryFailure(code: "50035", message: "Invalid Form Body")
            try await store.updateOutboxItem(backingOff)
            #expect(try await store.outboxItem(Snowflake(10))?.failure == backingOff.failure)
            #expect(try await store.outboxOwnersDue(at: now, limit: 10) == [bob, alice])
            // Delivered: gone, files and all; a failed item still counts in what waits.
            try await store.removeOutboxItem(Snowflake(20))
            try await store.removeOutboxItem(Snowflake(40))
            #expect(try await store.outbox(of: bob).isEmpty)
            #expect(try await store.outboxOwnersDue(at: now, limit: 10) == [alice])
            #expect(try await store.outboxUsage(of: nil).count == 2)
            try await store.removeOutboxItem(Snowflake(30))
            #expect(try await store.nextOutboxDue() == nil)
            #expect(try await store.outboxOwnersDue(at: now, limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func anEditWhileWaitingChangesTheTextAndItsSize(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let file = OutboxItem.File(filename: "log.txt", contentType: "text/plain", bytes: Data(repeating: 7, count: 100))
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice, files: [file])] }
            var edited = try #require(try await store.outboxItem(Snowflake(10)))
            edited.content = "a longer text than before"
            edited.postedParts = [Snowflake(999)]
            edited.files = []  // what it carries is not the update's to change
            try await store.updateOutboxItem(edited)
            let kept = try #require(try await store.outboxItem(Snowflake(10)))
            #expect(kept.content == "a longer text than before" && kept.postedParts == [Snowflake(999)] && kept.files == [file])
            #expect(try await store.outboxUsage(of: alice).bytes == "a longer text than before".utf8.count + 100)
            // An update of an item that is gone writes nothing.
            try await store.removeOutboxItem(Snowflake(10))
            try await store.updateOutboxItem(edited)
            #expect(try await store.outboxItem(Snowflake(10)) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aQueueHasOneHolderUntilItsHoldRunsOut(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice)] }
            let until = start.addingTimeInterval(120)
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: until, now: start))
            #expect(try await !store.claimOutbox(of: alice, holder: "b", until: until, now: start.addingTimeInterval(60)))
            // Held: not due for anyone else; the holder renews its hold.
            #expect(try await store.outboxOwnersDue(at: start.addingTimeInterval(60), limit: 10).isEmpty)
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: until.addingTimeInterval(60), now: start.addingTimeInterval(60)))
            #expect(try await !store.claimOutbox(of: alice, holder: "b", until: until, now: until))
            // Run out (the holder died): another takes it.
            #expect(try await store.outboxOwnersDue(at: until.addingTimeInterval(60), limit: 10) == [alice])
            #expect(try await store.claimOutbox(of: alice, holder: "b", until: until.addingTimeInterval(180), now: until.addingTimeInterval(60)))
            // Only the holder gives it back.
            try await store.releaseOutbox(of: alice, holder: "a")
            #expect(try await !store.claimOutbox(of: alice, holder: "a", until: until, now: until.addingTimeInterval(61)))
            try await store.releaseOutbox(of: alice, holder: "b")
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: until, now: until.addingTimeInterval(61)))
        }
    }

    @Test(arguments: StoreKind.available)
    func erasingAUserTakesTheirOutboxWithThem(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let file = OutboxItem.File(filename: "a.txt", contentType: nil, bytes: Data("x".utf8))
            try await store.withUser(alice, idempotencyKey: nil) { context in
                context.record = UserRecord(id: alice, now: start)
                context.enqueued = [item(10, alice, files: [file])]
            }
            try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [item(20, bob)] }
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: start.addingTimeInterval(60), now: start))
            #expect(try await store.eraseUser(alice) { _ in })
            #expect(try await store.outbox(of: alice).isEmpty)
            #expect(try await store.outboxItem(Snowflake(10)) == nil)
            #expect(try await store.outboxUsage(of: nil) == OutboxUsage(count: 1, bytes: item(20, bob).size, oldest: start))
            // No hold of the erased user's is left over.
            #expect(try await store.claimOutbox(of: alice, holder: "b", until: start.addingTimeInterval(60), now: start))
        }
    }
}

@Suite("Message ids of accepted messages")
struct MessageIDsTests {
    @Test func idsGrowSortByTimeAndNeverCollideAcrossProcesses() {
        let a = MessageIDs(worker: 1)
        let b = MessageIDs(worker: 2)
        var seen = Set<Snowflake>()
        var last = Snowflake(0)
        // 10,000 ids in one millisecond: past the 4,096 of the count, into the next millisecond.
        for _ in 0..<10_000 {
            let id = a.next(at: start)
            #expect(id > last)
            last = id
            seen.insert(id)
            seen.insert(b.next(at: start))
        }
        #expect(seen.count == 20_000)
        // Later is larger; a clock set back still gives larger ids.
        let later = a.next(at: start.addingTimeInterval(60))
        #expect(later > last && later.date == start.addingTimeInterval(60))
        #expect(a.next(at: start) > later)
        // Among Discord's ids by time: after an id Discord made a millisecond before.
        #expect(MessageIDs().next(at: start) > Snowflake(at: start.addingTimeInterval(-0.001)))
        #expect(MessageIDs().next(at: start) < Snowflake(at: start.addingTimeInterval(0.001)))
    }
}

@Suite("OutboxStore contract: ids and holds")
struct OutboxStoreEdges {
    @Test(arguments: StoreKind.available)
    func anIdAnotherMessageHasFailsTheAcceptingTransaction(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice)] }
            await #expect(throws: OutboxIDTaken.self) {
                try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [item(10, bob)] }
            }
            #expect(try await store.outbox(of: alice).map(\.id.rawValue) == [10])
            #expect(try await store.outbox(of: bob).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func aHeldQueueIsNextDueWhenItsHoldRunsOut(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice)] }
            let until = start.addingTimeInterval(120)
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: until, now: start))
            // Due, but held: not before the hold runs out (a loop sleeping until then does not spin).
            #expect(try await store.nextOutboxDue() == until)
            try await store.releaseOutbox(of: alice, holder: "a")
            #expect(try await store.nextOutboxDue() == start)
        }
    }
}

@Suite("OutboxStore contract: fenced writes")
struct OutboxStoreFences {
    @Test(arguments: StoreKind.available)
    func aHolderWhoseHoldRanOutWritesNothing(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let file = OutboxItem.File(filename: "a.txt", contentType: nil, bytes: Data("abc".utf8))
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice, files: [file]), item(20, alice, at: 1)] }
            let until = start.addingTimeInterval(120)
            #expect(try await store.claimOutbox(of: alice, holder: "a", until: until, now: start))
            var posted = try #require(try await store.outboxItem(Snowflake(10)))
            posted.postedParts = [Snowflake(1)]
            // The holder writes while its hold lasts; another, or the holder past it, does not.
            #expect(try await store.updateOutboxItem(posted, fence: OutboxFence(holder: "a", now: start)))
            posted.postedParts = [Snowflake(2)]
            #expect(try await !store.updateOutboxItem(posted, fence: OutboxFence(holder: "b", now: start)))
            #expect(try await !store.updateOutboxItem(posted, fence: OutboxFence(holder: "a", now: until)))
            #expect(try await store.outboxItem(Snowflake(10))?.postedParts == [Snowflake(1)])
            #expect(try await !store.removeOutboxItem(Snowflake(10), fence: OutboxFence(holder: "a", now: until)))
            #expect(try await store.outboxItem(Snowflake(10))?.files == [file])
            #expect(try await store.removeOutboxItem(Snowflake(10), fence: OutboxFence(holder: "a", now: start)))
            #expect(try await store.outboxItem(Snowflake(10)) == nil)
            #expect(try await store.outboxUsage(of: alice).count == 1)
            // Unfenced (the user's own edit or delete, under their lock): applies whoever holds.
            #expect(try await store.removeOutboxItem(Snowflake(20), fence: nil))
            #expect(try await !store.removeOutboxItem(Snowflake(20), fence: nil))
        }
    }

    /// Discord is back: items waiting out a backoff are due now, with their attempts counted;
    /// failed ones stay failed.
    @Test(arguments: StoreKind.available)
    func waitingItemsAreDueAtOnceWhenDiscordIsBack(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            var backedOff = item(10, alice)
            (backedOff.attempts, backedOff.nextAttempt) = (4, start.addingTimeInterval(60))
            var refused = item(20, bob)
            (refused.attempts, refused.nextAttempt, refused.failure) = (1, start.addingTimeInterval(60), DeliveryFailure(code: "50035", message: "no"))
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [backedOff] }
            try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [refused] }
            #expect(try await store.outboxOwnersDue(at: start, limit: 10).isEmpty)
            #expect(try await store.retryWaitingOutbox(at: start) == 1)
            #expect(try await store.outboxOwnersDue(at: start, limit: 10) == [alice])
            #expect(try await store.outboxItem(Snowflake(10))?.attempts == 4)
            #expect(try await store.outboxItem(Snowflake(20))?.failure != nil)
        }
    }

    /// A process that starts alone on its store takes over the holds a killed one left: its own
    /// stay, the others' go, and their queues are due at once.
    @Test(arguments: StoreKind.available)
    func holdsLeftByAnotherHolderAreReleasedAtOnce(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { $0.enqueued = [item(10, alice)] }
            try await store.withUser(bob, idempotencyKey: nil) { $0.enqueued = [item(20, bob)] }
            let until = start.addingTimeInterval(120)
            #expect(try await store.claimOutbox(of: alice, holder: "killed", until: until, now: start))
            #expect(try await store.claimOutbox(of: bob, holder: "me", until: until, now: start))
            #expect(try await store.outboxOwnersDue(at: start, limit: 10).isEmpty)
            try await store.releaseOutboxHolds(except: "me")
            #expect(try await store.outboxOwnersDue(at: start, limit: 10) == [alice])
            #expect(try await !store.claimOutbox(of: bob, holder: "other", until: until, now: start))
        }
    }
}
