import Testing
import ThreadDeskKit

@Suite("Backoff")
struct BackoffTests {
    @Test func stepsDoubleUpToTheCap() {
        let backoff = Backoff(base: 0.5, cap: 30)
        #expect((0..<9).map { backoff.step(attempt: $0) } == [0.5, 1, 2, 4, 8, 16, 30, 30, 30])
        #expect(backoff.step(attempt: 10_000) == 30)
        #expect(backoff.step(attempt: -3) == 0.5)
    }

    @Test func jitterKeepsHalfTheStepAndNeverExceedsIt() {
        let backoff = Backoff(base: 1, cap: 8)
        #expect(backoff.delay(attempt: 2, random: 0) == 2)
        #expect(backoff.delay(attempt: 2, random: 1) == 4)
        #expect(backoff.delay(attempt: 2, random: 0.5) == 3)
        // Out-of-range randomness is clamped.
        #expect(backoff.delay(attempt: 2, random: 7) == 4)
        #expect(backoff.delay(attempt: 2, random: -1) == 2)
        for attempt in 0..<20 {
            let delay = backoff.delay(attempt: attempt)
            #expect(delay >= backoff.step(attempt: attempt) / 2 && delay <= backoff.step(attempt: attempt))
        }
    }
}
