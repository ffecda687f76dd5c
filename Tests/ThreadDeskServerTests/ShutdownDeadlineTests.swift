import Logging
import ServiceLifecycle
import Synchronization
import Testing
import TestSupport
import ThreadDeskSettings

/// The process's stop has a deadline of its own: past it, a log line and the end (recorded here
/// instead of `_exit`), never ServiceGroup's trap; a stop in time never reaches it.
@Suite struct ShutdownDeadlineTests {
    /// Ends only when released, whatever happens to its task: what a service that ignores
    /// cancellation looks like to the group.
    final class Stubborn: Service, Sendable {
        private let state = Mutex<(released: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))
        let started = Watched(false)

        func run() async throws {
            started.update { $0 = true }
            await withCheckedContinuation { continuation in
                let resume = state.withLock { state in
                    if state.released { return true }
                    state.waiting = continuation
                    return false
                }
                if resume { continuation.resume() }
            }
        }

        func release() {
            state.withLock { state in
                state.released = true
                defer { state.waiting = nil }
                return state.waiting
            }?.resume()
        }
    }

    /// Ends with an error at once, so the group is cancelled rather than stopped gracefully.
    struct Failing: Service {
        struct Failed: Error {}
        func run() async throws { throw Failed() }
    }

    /// Ends as soon as it is asked to stop.
    struct Polite: Service {
        func run() async throws { try? await gracefulShutdown() }
    }

    static func deadline(clock: ManualClock, expired: Watched<Int>, then: @escaping @Sendable () -> Void = {}) -> ShutdownDeadline {
        ShutdownDeadline(
            graceful: .seconds(15), cancelled: .seconds(5), logger: Logger(label: "test"),
            sleep: { try await clock.sleep(for: $0) },
            expire: {
                expired.update { $0 += 1 }
                then()
            })
    }

    @Test func aServiceThatIgnoresCancellationEndsTheProcessAtTheDeadlineNotBefore() async throws {
        let clock = ManualClock()
        let expired = Watched(0)
        let stubborn = Stubborn()
        let group = buildServiceGroup(
            [stubborn], grace: .milliseconds(1), cancelGrace: .seconds(5), logger: Logger(label: "test"),
            deadline: Self.deadline(clock: clock, expired: expired, then: { stubborn.release() }))
        let running = Task { try await group.run() }
        try await stubborn.started.wait(for: "the stubborn service started") { $0 }
        await group.triggerGracefulShutdown()
        try await clock.waitForSleepers(1)
        #expect(clock.sleepsLeft == [.seconds(15)])

        // The group cancelled the service after its grace (1 ms of real time); it still runs.
        clock.advance(by: .seconds(15) - .milliseconds(1))
        #expect(expired.value == 0)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        try await expired.wait(for: "the deadline expired") { $0 == 1 }
        try await running.value
        #expect(expired.value == 1)
    }

    @Test func aCancelledGroupGetsTheCancellationTimeOnly() async throws {
        let clock = ManualClock()
        let expired = Watched(0)
        let stubborn = Stubborn()
        let group = buildServiceGroup(
            [stubborn, Failing()], grace: .seconds(10), cancelGrace: .seconds(5), logger: Logger(label: "test"),
            deadline: Self.deadline(clock: clock, expired: expired, then: { stubborn.release() }))
        let running = Task { try await group.run() }
        try await clock.waitForSleepers(1)
        #expect(clock.sleepsLeft == [.seconds(5)])
        try clock.advanceToNextDeadline()
        try await expired.wait(for: "the deadline expired") { $0 == 1 }
        await #expect(throws: Failing.Failed.self) { try await running.value }
    }

    @Test func aStopInTimeDisarmsTheDeadline() async throws {
        let clock = ManualClock()
        let expired = Watched(0)
        let group = buildServiceGroup(
            [Polite()], grace: .seconds(10), cancelGrace: .seconds(5), logger: Logger(label: "test"),
            deadline: Self.deadline(clock: clock, expired: expired))
        let running = Task { try await group.run() }
        await group.triggerGracefulShutdown()
        try await running.value
        // Disarmed: the deadline's sleep is cancelled, so nothing is left to wake.
        try await clock.changes.wait(for: "the deadline's sleep ended") { _ in clock.sleeperCount == 0 }
        clock.advance(by: .seconds(60))
        #expect(expired.value == 0)
    }
}
