import Deadlines
import TestSupport
import Testing

/// The sleep every timeout in the product uses: it lasts its time, and a cancelled one ends at
/// once and gives its timer back (a cancelled `Task.sleep` keeps it until it would have woken).
@Suite("cancellableSleep", .timeLimit(.minutes(1)))
struct CancellableSleepTests {
    @Test func aSleepLastsItsDuration() async throws {
        let started = ContinuousClock.now
        try await cancellableSleep(for: .milliseconds(200))
        #expect(started.duration(to: .now) >= .milliseconds(199))
    }

    @Test func cancelledSleepsEndAtOnceAndHandTheirTimersBack() async throws {
        let count = 5_000
        // Other suites run beside this one and arm timeouts of their own: the counts below leave
        // them a tenth of `count` either way.
        let before = armedSleeps
        let sleepers = (0..<count).map { _ in
            Task { () -> Bool in
                do {
                    try await cancellableSleep(for: .seconds(600))
                    return false
                } catch {
                    return error is CancellationError
                }
            }
        }
        try await eventually("every sleep armed") { armedSleeps >= before + count - count / 10 }
        let cancelled = ContinuousClock.now
        for sleeper in sleepers { sleeper.cancel() }
        for sleeper in sleepers { #expect(await sleeper.value, "a cancelled sleep must throw CancellationError") }
        #expect(cancelled.duration(to: .now) < .seconds(10))
        #expect(armedSleeps < before + count / 10, "cancelled sleeps still hold \(armedSleeps - before) timers")
    }

    @Test func aSleepInACancelledTaskThrowsWithoutArmingATimer() async throws {
        let outcome = await Task { () -> (any Error)? in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                try await cancellableSleep(for: .seconds(600))
                return nil
            } catch {
                return error
            }
        }.value
        #expect(outcome is CancellationError)
    }

    @Test func aTimeoutFiresOnItsOwnAndWaitsForTheCancelledWork() async throws {
        let started = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await withTimeout(.milliseconds(100), "a wait that never ends") {
                try await cancellableSleep(for: .seconds(600))
            }
        }
        #expect(started.duration(to: .now) < .seconds(10))
        #expect(try await withTimeout(.seconds(600), "a quick answer") { 42 } == 42)
    }
}
