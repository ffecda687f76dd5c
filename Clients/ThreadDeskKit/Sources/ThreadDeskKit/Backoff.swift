/// How long to wait before the next attempt: exponential from `base`, at most `cap`, with
/// jitter so that many apps cut off at once do not all come back in the same second. Equal
/// jitter: half the step for sure, the other half at random, so a retry never comes at once.
public struct Backoff: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration
    public var multiplier: Double

    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(30), multiplier: Double = 2) {
        precondition(base > .zero && cap >= base && multiplier >= 1, "Backoff needs 0 < base <= cap and multiplier >= 1")
        self.base = base
        self.cap = cap
        self.multiplier = multiplier
    }

    /// The step for `attempt` (0 for the first retry) before jitter.
    public func step(attempt: Int) -> Duration {
        var step = base
        for _ in 0..<max(0, min(attempt, 64)) {
            step = step * multiplier
            if step >= cap { return cap }
        }
        return min(step, cap)
    }

    /// The wait before retry number `attempt`, with `random` a number in 0..<1.
    public func delay(attempt: Int, random: Double) -> Duration {
        let step = step(attempt: attempt)
        return step / 2 + (step / 2) * min(max(random, 0), 1)
    }

    /// The wait before retry number `attempt`.
    public func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, random: Double.random(in: 0..<1))
    }
}
