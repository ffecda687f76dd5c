import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore

private let today = "2026-11-28"
private let yesterday = "2026-11-27"
private let app = AssistKey.app(AppID("ledger-app")!)
private let alice = AssistKey.user(UserID("ledger-alice")!)
private let bob = AssistKey.user(UserID("ledger-bob")!)

/// The assistant's budgets, the same on every store: a reservation adds to every key or to none,
/// and concurrent ones never take a key past its limit.
@Suite("AssistLedger contract")
struct AssistLedgerContract {
    @Test(arguments: StoreKind.available)
    func aReservationWithinTheLimitsAddsToEveryKey(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.assistTokensUsed(app, day: today) == 0)
            #expect(try await store.reserveAssistTokens(300, day: today, limits: [app: 1000, alice: 500]))
            #expect(try await store.reserveAssistTokens(200, day: today, limits: [app: 1000, alice: 500]))
            #expect(try await store.assistTokensUsed(app, day: today) == 500)
            #expect(try await store.assistTokensUsed(alice, day: today) == 500, "exactly at the limit is within it")
            #expect(try await store.assistTokensUsed(bob, day: today) == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func aReservationOverAnyLimitAddsNothing(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.reserveAssistTokens(400, day: today, limits: [app: 1000, alice: 500]))
            // The app has room; Alice has not.
            #expect(try await !store.reserveAssistTokens(101, day: today, limits: [app: 1000, alice: 500]))
            #expect(try await store.assistTokensUsed(app, day: today) == 400)
            #expect(try await store.assistTokensUsed(alice, day: today) == 400)
            // Bob has room; the app has not.
            #expect(try await store.reserveAssistTokens(500, day: today, limits: [app: 1000, bob: 600]))
            #expect(try await !store.reserveAssistTokens(101, day: today, limits: [app: 1000, bob: 600]))
            #expect(try await store.assistTokensUsed(app, day: today) == 900)
            #expect(try await store.assistTokensUsed(bob, day: today) == 500)
            #expect(try await store.reserveAssistTokens(100, day: today, limits: [app: 1000, alice: 500]))
            #expect(try await store.assistTokensUsed(app, day: today) == 1000)
        }
    }

    @Test(arguments: StoreKind.available)
    func aLimitOfZeroIsNoLimit(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.reserveAssistTokens(1_000_000, day: today, limits: [app: 0, alice: 2_000_000]))
            #expect(try await store.reserveAssistTokens(1_000_000, day: today, limits: [app: 0, alice: 2_000_000]))
            #expect(try await !store.reserveAssistTokens(1, day: today, limits: [app: 0, alice: 2_000_000]))
            #expect(try await store.assistTokensUsed(app, day: today) == 2_000_000, "counted all the same")
            #expect(try await store.reserveAssistTokens(5, day: today, limits: [app: 0]))
            #expect(try await store.assistTokensUsed(app, day: today) == 2_000_005)
        }
    }

    @Test(arguments: StoreKind.available)
    func daysAreSeparate(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.reserveAssistTokens(100, day: yesterday, limits: [alice: 100]))
            #expect(try await !store.reserveAssistTokens(1, day: yesterday, limits: [alice: 100]))
            #expect(try await store.reserveAssistTokens(100, day: today, limits: [alice: 100]), "a new day, a new budget")
            #expect(try await store.assistTokensUsed(alice, day: yesterday) == 100)
            #expect(try await store.assistTokensUsed(alice, day: today) == 100)
        }
    }

    @Test(arguments: StoreKind.available)
    func settlingAddsTheDifferenceAndFloorsAtZero(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.reserveAssistTokens(500, day: today, limits: [app: 0, alice: 1000]))
            // The provider said the answer cost less than reserved.
            try await store.adjustAssistTokens(-120, day: today, keys: [app, alice])
            #expect(try await store.assistTokensUsed(app, day: today) == 380)
            #expect(try await store.assistTokensUsed(alice, day: today) == 380)
            // And once more than reserved.
            try await store.adjustAssistTokens(20, day: today, keys: [alice])
            #expect(try await store.assistTokensUsed(alice, day: today) == 400)
            #expect(try await store.assistTokensUsed(app, day: today) == 380)
            try await store.adjustAssistTokens(-10_000, day: today, keys: [app, alice])
            #expect(try await store.assistTokensUsed(app, day: today) == 0)
            #expect(try await store.assistTokensUsed(alice, day: today) == 0)
            // A key with no row yet: a negative settlement leaves 0, a positive one counts.
            try await store.adjustAssistTokens(-5, day: today, keys: [bob])
            #expect(try await store.assistTokensUsed(bob, day: today) == 0)
            try await store.adjustAssistTokens(7, day: yesterday, keys: [bob])
            #expect(try await store.assistTokensUsed(bob, day: yesterday) == 7)
        }
    }

    @Test(arguments: StoreKind.available)
    func pruningRemovesOnlyEarlierDays(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            for day in ["2026-10-31", yesterday, today] {
                #expect(try await store.reserveAssistTokens(10, day: day, limits: [app: 0, alice: 0]))
            }
            #expect(try await store.pruneAssistUsage(before: yesterday) == 2)
            #expect(try await store.assistTokensUsed(app, day: "2026-10-31") == 0)
            #expect(try await store.assistTokensUsed(alice, day: yesterday) == 10)
            #expect(try await store.assistTokensUsed(app, day: today) == 10)
            #expect(try await store.pruneAssistUsage(before: yesterday) == 0)
            #expect(try await store.pruneAssistUsage(before: "2026-11-29") == 4)
            #expect(try await store.assistTokensUsed(app, day: today) == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentReservationsNeverPassTheLimit(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let granted = try await reserveConcurrently(50, from: [store])
            #expect(granted == 10)
            #expect(try await store.assistTokensUsed(alice, day: today) == 10)
            #expect(try await store.assistTokensUsed(app, day: today) == 10)
        }
    }

    /// Two replicas on one PostgreSQL share one ledger: their reservations together stay within it.
    @Test(.enabled(if: postgresIsAvailable))
    func replicasOnOnePostgreSQLShareTheLedger() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { first in
                try await PostgresStore.withRunning(url: url) { second in
                    let granted = try await reserveConcurrently(50, from: [first, second])
                    #expect(granted == 10)
                    #expect(try await first.assistTokensUsed(alice, day: today) == 10)
                    #expect(try await second.assistTokensUsed(app, day: today) == 10)
                }
            }
        }
    }

    /// `count` reservations of 1 at once against Alice's limit of 10, spread over `stores`; how
    /// many were granted.
    private func reserveConcurrently(_ count: Int, from stores: [any UserStore]) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                let store = stores[index % stores.count]
                group.addTask { try await store.reserveAssistTokens(1, day: today, limits: [app: 0, alice: 10]) }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }
}
