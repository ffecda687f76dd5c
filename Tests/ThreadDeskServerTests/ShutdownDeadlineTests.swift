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

    /// The group as the executables build it, on a driven clock, its deadline recorded.
    static func group(
        _ services: [any Service], grace: Duration, clock: ManualClock, expired: Watched<Int>, then: @escaping @Sendable () -> Void = {}
    ) -> DeadlinedServiceGroup {
        buildServiceGroup(
            services, grace: grace, cancelGrace: .seconds(5), logger: Logger(label: "test"), sleep: { try await clock.sleep(for: $0) },
            expire: { report in
                report()
                expired.update { $0 += 1 }
                then()
            })
    }

    @Test func aServiceThatIgnoresCancellationEndsTheProcessAtTheDeadlineNotBefore() async throws {
        let clock = ManualClock()
        let expired = Watched(0)
        let stubborn = Stubborn()
        // ServiceGroup cancels the service after 1 ms of real time; it goes on regardless.
        let group = Self.group([stubborn], grace: .milliseconds(1), clock: clock, expired: expired, then: { stubborn.release() })
        let running = Task { try await group.run() }
        try await stubborn.started.wait(for: "the stubborn service started") { $0 }
        await group.triggerGracefulShutdown()
        try await clock.waitForSleepers(1)
        // Grace and cancel grace, from the start of the stop.
        #expect(clock.sleepsLeft == [.seconds(5) + .milliseconds(1)])

        clock.advance(by: .seconds(5))
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
        let group = Self.group([stubborn, Failing()], grace: .seconds(10), clock: clock, expired: expired, then: { stubborn.release() })
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
        let slow = Stubborn()
        let group = Self.group([slow], grace: .seconds(10), clock: clock, expired: expired)
        let running = Task { try await group.run() }
        try await slow.started.wait(for: "the service started") { $0 }
        await group.triggerGracefulShutdown()
        // Armed while the service still finishes its work; then it ends in time.
        try await clock.waitForSleepers(1)
        slow.release()
        try await running.value
        // Disarmed: the deadline's sleep is cancelled, so nothing is left to wake or to fire.
        try await clock.changes.wait(for: "the deadline's sleep ended") { _ in clock.sleeperCount == 0 }
        clock.advance(by: .seconds(60))
        #expect(expired.value == 0)
    }
}
