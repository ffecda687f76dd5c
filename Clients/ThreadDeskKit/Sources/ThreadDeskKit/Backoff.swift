import Foundation

/// How long to wait before the next attempt, in seconds: exponential from `base`, at most `cap`,
/// with jitter so that many apps cut off at once do not all come back in the same second. Equal
/// jitter: half the step for sure, the other half at random, so a retry never comes at once.
/// (Seconds as `TimeInterval`, not `Duration`: the SDK runs on iOS 15 and macOS 12.)
public struct Backoff: Sendable, Hashable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public var multiplier: Double

    public init(base: TimeInterval = 0.5, cap: TimeInterval = 30, multiplier: Double = 2) {
        precondition(base > 0 && cap >= base && multiplier >= 1, "Backoff needs 0 < base <= cap and multiplier >= 1")
        self.base = base
        self.cap = cap
        self.multiplier = multiplier
    }

    /// The step for `attempt` (0 for the first retry) before jitter.
    public func step(attempt: Int) -> TimeInterval {
        var step = base
        for _ in 0..<max(0, min(attempt, 64)) {
            step *= multiplier
            if step >= cap { return cap }
        }
        return min(step, cap)
    }

    /// The wait before retry number `attempt`, with `random` a number in 0...1.
    public func delay(attempt: Int, random: Double) -> TimeInterval {
        let step = step(attempt: attempt)
        return step / 2 + step / 2 * min(max(random, 0), 1)
    }

    /// The wait before retry number `attempt`.
    public func delay(attempt: Int) -> TimeInterval {
        delay(attempt: attempt, random: Double.random(in: 0...1))
    }
}

/// Time for the SDK's waits and throttles, without the Clock API (iOS 16+).
enum Time {
    /// A monotonic reading in seconds (not wall-clock time: immune to clock changes).
    static var now: TimeInterval { TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Sleeps `seconds` (negative or NaN: not at all); throws when the task is cancelled.
    static func sleep(_ seconds: TimeInterval) async throws {
        guard seconds > 0 else {
            try Task.checkCancellation()
            return
        }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1e9))
    }
}
