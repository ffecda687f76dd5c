import Testing
import ThreadDeskKit

@Suite("Backoff")
struct BackoffTests {
    @Test func stepsDoubleUpToTheCap() {
        let backoff = Backoff(base: .milliseconds(500), cap: .seconds(30))
        #expect((0..<9).map { backoff.step(attempt: $0) } == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30), .seconds(30),
        ])
        #expect(backoff.step(attempt: 10_000) == .seconds(30))
        #expect(backoff.step(attempt: -3) == .milliseconds(500))
    }

    @Test func jitterKeepsHalfTheStepAndNeverExceedsIt() {
        let backoff = Backoff(base: .seconds(1), cap: .seconds(8))
        #expect(backoff.delay(attempt: 2, random: 0) == .seconds(2))
        #expect(backoff.delay(attempt: 2, random: 1) == .seconds(4))
        #expect(backoff.delay(attempt: 2, random: 0.5) == .seconds(3))
        // Out-of-range randomness is clamped.
        #expect(backoff.delay(attempt: 2, random: 7) == .seconds(4))
        for attempt in 0..<20 {
            let delay = backoff.delay(attempt: attempt)
            #expect(delay >= backoff.step(attempt: attempt) / 2 && delay <= backoff.step(attempt: attempt))
        }
    }
}
