import Testing
import TestSupport
@testable import ThreadDeskServer

/// The turns stream openings take (`OpeningTurns`), on a clock the test drives.
@Suite("Live: opening turns", .timeLimit(.minutes(2)))
struct LiveOpeningTurnsTests {
    struct Counts: Sendable, Equatable, CustomStringConvertible {
        var holding = 0
        var waiting = 0
        var description: String { "\(holding) holding, \(waiting) waiting" }
    }

    /// Turns whose counts the test watches, and a holder of one of them until `release` turns true.
    struct Fixture {
        let clock = ManualClock()
        let counts = Watched(Counts())
        let release = Watched(false)
        let turns: OpeningTurns

        init(turns count: Int = 1, maxWaiting: Int, wait: Duration = .seconds(10)) {
            let counts = counts
            turns = OpeningTurns(turns: count, maxWaiting: maxWaiting, wait: wait, time: .driven(by: clock)) { holding, waiting in
                counts.update { $0 = Counts(holding: holding, waiting: waiting) }
            }
        }

        /// A task holding a turn until `release`.
        func holder() async throws -> Task<Void, any Error> {
            let (turns, release) = (turns, release)
            let held = counts.value.holding
            let task = Task { try await turns.withTurn { try await release.wait(for: "the test to give the turn back") { $0 } } }
            try await counts.wait(for: "the holder's turn") { $0.holding == held + 1 }
            return task
        }

        /// A task waiting for a turn, once it has its place; it runs `body` in the turn.
        func waiter(_ body: @escaping @Sendable () -> Void = {}) async throws -> Task<Void, any Error> {
            let turns = turns
            let waiting = counts.value.waiting
            let task = Task { try await turns.withTurn(body) }
            try await counts.wait(for: "a waiter in its place") { $0.waiting == waiting + 1 }
            return task
        }
    }

    /// Waiters get their turns in the order they came, each straight from the one before.
    @Test func turnsComeInArrivalOrder() async throws {
        let fixture = Fixture(maxWaiting: 5)
        let holder = try await fixture.holder()
        let order = Watched<[Int]>([])
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<5 { waiters.append(try await fixture.waiter { order.update { $0.append(index) } }) }
        fixture.release.update { $0 = true }
        try await holder.value
        for waiter in waiters { try await waiter.value }
        #expect(order.value == [0, 1, 2, 3, 4])
        #expect(fixture.counts.value == Counts())
    }

    /// Past `maxWaiting` waiting, an opening is refused at once; a waiter is refused when its
    /// wait runs out on the clock, and not before.
    @Test func theQueueIsBoundedAndItsWaitsEndOnTheClock() async throws {
        let fixture = Fixture(maxWaiting: 2, wait: .seconds(10))
        let holder = try await fixture.holder()
        let first = try await fixture.waiter()
        let second = try await fixture.waiter()
        await #expect(throws: OpeningTurns.Refusal.full) { try await fixture.turns.withTurn {} }
        #expect(fixture.counts.value == Counts(holding: 1, waiting: 2))

        try await fixture.clock.waitForSleepers(2)
        fixture.clock.advance(by: .seconds(9))
        #expect(fixture.counts.value == Counts(holding: 1, waiting: 2))
        fixture.clock.advance(by: .seconds(1))
        await #expect(throws: OpeningTurns.Refusal.waitedTooLong) { try await first.value }
        await #expect(throws: OpeningTurns.Refusal.waitedTooLong) { try await second.value }
        #expect(fixture.counts.value == Counts(holding: 1, waiting: 0))

        // Room again: a waiter takes its place, and gets the turn given back.
        let third = try await fixture.waiter()
        fixture.release.update { $0 = true }
        try await holder.value
        try await third.value
        #expect(fixture.counts.value == Counts())
        try await fixture.turns.withTurn {}
    }

    /// A waiter whose request went away leaves its place; the one behind it is not left behind.
    @Test func aCancelledWaiterLeavesAndTheNextGetsTheTurn() async throws {
        let fixture = Fixture(maxWaiting: 3)
        let holder = try await fixture.holder()
        let gone = try await fixture.waiter()
        let ran = Watched(false)
        let next = try await fixture.waiter { ran.update { $0 = true } }
        gone.cancel()
        await #expect(throws: CancellationError.self) { try await gone.value }
        try await fixture.counts.wait(for: "the cancelled waiter gone") { $0.waiting == 1 }
        fixture.release.update { $0 = true }
        try await holder.value
        try await next.value
        #expect(ran.value)
        #expect(fixture.counts.value == Counts())
    }

    /// Several turns: as many hold at once, and the queue starts only when all are held.
    @Test func severalTurnsAreHeldAtOnce() async throws {
        let fixture = Fixture(turns: 3, maxWaiting: 1)
        let holders = [try await fixture.holder(), try await fixture.holder(), try await fixture.holder()]
        #expect(fixture.counts.value == Counts(holding: 3, waiting: 0))
        let waiter = try await fixture.waiter()
        await #expect(throws: OpeningTurns.Refusal.full) { try await fixture.turns.withTurn {} }
        fixture.release.update { $0 = true }
        for holder in holders { try await holder.value }
        try await waiter.value
        #expect(fixture.counts.value == Counts())
    }
}
