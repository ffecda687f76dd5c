import TestSupport
@testable import ThreadDeskServer

/// The hub's open streams as states a test awaits (reported to the harness's `BackgroundWork`),
/// instead of polling `/metrics` for them; and its timer moved on a clock the test drives.
extension Harness {
    /// Returns once the hub holds `count` streams; throws, naming the count then, past `timeout`.
    func openStreams(_ count: Int, within timeout: Duration = .seconds(120)) async throws {
        try await work.level(LiveHub.openLevel, within: timeout) { $0 == count }
    }

    /// Returns once the hub has closed `count` streams in all for a stalled write.
    func droppedStreams(_ count: Int, within timeout: Duration = .seconds(120)) async throws {
        try await work.level(LiveHub.droppedLevel, within: timeout) { $0 >= count }
    }

    /// Runs `body` while `clock` (the server's) moves one tick of the hub's timer at a time, each
    /// time the timer sleeps a whole tick on it, as time would pass for the open streams: for a
    /// body that awaits what the ticks bring (keep-alives, a lifetime's end). Other sleepers on the
    /// clock see it move as well.
    func passingTicks<T: Sendable>(
        of tick: Duration, on clock: ManualClock, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                while true {
                    try await clock.changes.wait(for: "the hub's timer asleep for a tick of \(tick)") { _ in clock.sleepsLeft.contains(tick) }
                    clock.advance(by: tick)
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }
}
