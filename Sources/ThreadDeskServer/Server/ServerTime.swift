import Deadlines
import Foundation

/// The time as every server service reads it: `clock` for each wait and interval, `now()` for
/// each timestamp. The same clock the libraries take (`DiscordClient`, `APNsClient`). A running
/// server uses the continuous clock and the system's date; a test passes a clock it drives and a
/// date that moves with it. (Latencies reported as metrics are measured on the real clock.)
public struct ServerTime: Sendable {
    public let clock: any Clock<Duration>
    public let now: @Sendable () -> Date
    /// How long the clock has run since this value was made: stamps that are only compared with
    /// each other (a typing gate's last pass).
    let elapsed: @Sendable () -> Duration
    /// Sleeps until the clock has run `elapsed` since this value was made: a deadline, not a
    /// duration, so a clock that moves between reading it and sleeping cannot push it later.
    private let sleepUntilElapsed: @Sendable (Duration) async throws -> Void

    public init<C: Clock>(clock: C, now: @escaping @Sendable () -> Date) where C.Duration == Duration {
        let origin = clock.now
        self.clock = clock
        self.now = now
        elapsed = { origin.duration(to: clock.now) }
        sleepUntilElapsed = { target in try await clock.sleep(until: origin.advanced(by: target), tolerance: nil) }
    }

    public static let system = ServerTime(clock: ContinuousClock(), now: Date.init)

    /// `clock`, with a date that starts at `start` and moves only as far as the clock does.
    public static func driven<C: Clock>(by clock: C, from start: Date = Date()) -> ServerTime where C.Duration == Duration {
        let origin = clock.now
        return ServerTime(clock: clock, now: { start.addingTimeInterval(origin.duration(to: clock.now) / .seconds(1)) })
    }

    /// Sleeps `duration` on the clock; cancellation ends it at once. On the continuous clock it is
    /// `cancellableSleep`, which hands its timer back when cancelled (as every timeout does).
    func sleep(for duration: Duration) async throws {
        if clock is ContinuousClock { return try await cancellableSleep(for: duration) }
        try await clock.sleep(for: duration)
    }

    /// Waits for `signal` until the clock has run `target` since this value was made (a deadline:
    /// a clock moved between reading it and waiting cannot push the wake-up later). True when woken.
    @discardableResult
    func wait(for signal: WakeSignal, untilElapsed target: Duration) async -> Bool {
        if clock is ContinuousClock { return await signal.wait(upTo: max(.zero, target - elapsed())) }
        return await signal.wait(orUntil: { try? await self.sleep(untilElapsed: target) })
    }

    /// Sleeps until the clock has run `target` since this value was made (see `elapsed`); at once
    /// when it has. Cancellation ends it at once.
    func sleep(untilElapsed target: Duration) async throws {
        if clock is ContinuousClock { return try await cancellableSleep(for: max(.zero, target - elapsed())) }
        try await sleepUntilElapsed(target)
    }
}
