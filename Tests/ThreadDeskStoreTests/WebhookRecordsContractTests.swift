import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore

private let alice = UserID("hook-alice")!
private let bob = UserID("hook-bob")!
private let start = Date(timeIntervalSince1970: 1_800_000_000)

private func delivery(_ id: String, hook: String = "wh_a", owner: UserID = alice, at seconds: Double = 0) -> WebhookDelivery {
    WebhookDelivery(
        id: id, hook: hook, app: .default, owner: owner, type: "message.created", body: Data(#"{"id":"\#(id)","data":"✓"}"#.utf8),
        createdAt: start.addingTimeInterval(seconds))
}

private struct Refused: Error {}

/// Webhook deliveries: recorded with a user's transaction, claimed one queue head at a time,
/// retried, turned off, erased: the same on every store.
@Suite("WebhookRecords contract")
struct WebhookRecordsContract {
    @Test(arguments: StoreKind.available)
    func deliveriesCommitWithTheTransactionThatRecordsThem(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { context in
                context.record = UserRecord(id: alice, now: start)
                context.webhookEvents = [delivery("d1"), delivery("d2", at: 1)]
            }
            // A body that throws records nothing, as it accepts no message.
            await #expect(throws: Refused.self) {
                try await store.withUser(alice, idempotencyKey: nil) { context in
                    context.webhookEvents = [delivery("d3", at: 2)]
                    throw Refused()
                }
            }
            let kept = try await store.pendingWebhooks(of: alice)
            #expect(kept.map(\.id) == ["d1", "d2"])
            #expect(kept.first == delivery("d1"))
            #expect(try await store.pendingWebhooks(of: bob).isEmpty)
            // Kept once, however often it is enqueued (a commit retried).
            try await store.enqueueWebhooks([delivery("d1")])
            #expect(try await store.webhookUsage() == WebhookUsage(count: 2, oldest: start))
        }
    }

    @Test(arguments: StoreKind.available)
    func aQueueGoesOneDeliveryAtATimeInOrderBesideTheOthers(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.enqueueWebhooks([
                delivery("a1"), delivery("a2", at: 1), delivery("b1", owner: bob, at: 2), delivery("x1", hook: "wh_x", at: 3),
            ])
            let now = start.addingTimeInterval(10)
            let lease = now.addingTimeInterval(40)
            let first = try await store.claimWebhooks(now: now, until: lease, holder: "one", limit: 10, excluding: [])
            // The head of each queue, never the second of one: a1, b1 and x1, oldest due first.
            #expect(first.map(\.id) == ["a1", "b1", "x1"])
            // Leased: another holder finds nothing until the lease ends.
            #expect(try await store.claimWebhooks(now: now, until: lease, holder: "two", limit: 10, excluding: []).isEmpty)
            #expect(try await store.nextWebhookDue() == lease)
            let taken = try await store.claimWebhooks(now: lease, until: lease.addingTimeInterval(40), holder: "two", limit: 10, excluding: ["wh_x"])
            #expect(taken.map(\.id) == ["a1", "b1"])
            // Done: the next of the queue is its head.
            try await store.finishWebhook("a1")
            let later = lease.addingTimeInterval(50)
            #expect(try await store.claimWebhooks(now: later, until: later.addingTimeInterval(40), holder: "one", limit: 1, excluding: []).map(\.id) == ["a2"])
        }
    }

    @Test(arguments: StoreKind.available)
    func aFailedAttemptWaitsAndHoldsItsQueue(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.enqueueWebhooks([delivery("a1"), delivery("a2", at: 1)])
            let now = start.addingTimeInterval(5)
            #expect(try await store.claimWebhooks(now: now, until: now.addingTimeInterval(40), holder: "one", limit: 5, excluding: []).map(\.id) == ["a1"])
            let next = now.addingTimeInterval(20)
            try await store.retryWebhook("a1", attempts: 1, nextAttempt: next)
            #expect(try await store.nextWebhookDue() == next)
            // Not before its time, and a2 waits behind it.
            #expect(try await store.claimWebhooks(now: now.addingTimeInterval(10), until: next, holder: "one", limit: 5, excluding: []).isEmpty)
            let again = try await store.claimWebhooks(now: next, until: next.addingTimeInterval(40), holder: "two", limit: 5, excluding: [])
            #expect(again.map(\.id) == ["a1"] && again.first?.attempts == 1 && again.first?.body == delivery("a1").body)
            // A process's leases let go at its next start (another holder's stay).
            try await store.releaseWebhookLeases(except: "one")
            #expect(try await store.claimWebhooks(now: next, until: next.addingTimeInterval(40), holder: "one", limit: 5, excluding: []).map(\.id) == ["a1"])
        }
    }

    @Test(arguments: StoreKind.available)
    func aWebhookTurnedOffDropsWhatWaitsAndIsKept(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.enqueueWebhooks([delivery("a1"), delivery("a2", at: 1), delivery("x1", hook: "wh_x", at: 2)])
            let off = WebhookOff(hook: "wh_a", app: .default, host: "hooks.example.com", since: start.addingTimeInterval(9))
            #expect(try await store.turnWebhookOff(off) == 2)
            #expect(try await store.webhooksOff() == [off])
            #expect(try await store.pendingWebhooks(of: nil).map(\.id) == ["x1"])
            // Off once: a second 410 keeps the first moment.
            var later = off
            later.since = start.addingTimeInterval(99)
            #expect(try await store.turnWebhookOff(later) == 0)
            #expect(try await store.webhooksOff() == [off])
            try await store.turnWebhookOn("wh_a")
            #expect(try await store.webhooksOff().isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func erasureTakesTheUsersDeliveries(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice, idempotencyKey: nil) { context in
                context.record = UserRecord(id: alice, now: start)
                context.webhookEvents = [delivery("a1")]
            }
            try await store.enqueueWebhooks([delivery("b1", owner: bob)])
            _ = try await store.eraseUser(alice) { _ in }
            #expect(try await store.pendingWebhooks(of: nil).map(\.id) == ["b1"])
        }
    }
}
