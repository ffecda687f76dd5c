import ServiceLifecycle
import Testing
import TestSupport
@testable import ThreadDeskServer

/// A part whose stop may take so long and no longer (the store's pool): past its time the process
/// goes on without it, so it is out within its grace.
@Suite("Stop: a part's stop within its time", .timeLimit(.minutes(1)))
struct StopWithinTests {
    /// Hears the stop and does not end, cancelled or not, until the test lets it.
    private struct Stuck: Service {
        let release: AsyncStream<Void>

        func run() async throws {
            try? await gracefulShutdown()
            // Not cancellable: the way a pool waits for a connection a stuck query holds.
            await Task.detached { [release] in for await _ in release { return } }.value
        }
    }

    private struct Polite: Service {
        func run() async throws { try? await gracefulShutdown() }
    }

    private struct Broken: Service {
        struct Failure: Error {}
        func run() async throws { throw Failure() }
    }

    @Test func aPartThatDoesNotStopIsLeftBehindWhenItsTimeIsUp() async throws {
        let clock = ManualClock()
        let (release, releasing) = AsyncStream<Void>.makeStream()
        let bounded = StopWithin(service: Stuck(release: release), limit: { .seconds(3) }, time: .driven(by: clock), logger: testLogger())
        let group = ServiceGroup(services: [bounded], gracefulShutdownSignals: [], logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await clock.waitForSleepers(1)
            #expect(clock.sleepsLeft == [.seconds(3)])
            clock.advance(by: .seconds(3))
            // The group ends though the part still runs.
            try await tasks.waitForAll()
        }
        releasing.finish()
    }

    @Test func aPartThatStopsEndsTheWaitAtOnce() async throws {
        let clock = ManualClock()
        let bounded = StopWithin(service: Polite(), limit: { .seconds(3) }, time: .driven(by: clock), logger: testLogger())
        let group = ServiceGroup(services: [bounded], gracefulShutdownSignals: [], logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            // No time passes on the clock: the part's own end ends the group.
            try await tasks.waitForAll()
        }
        // Its timer was set at the stop and cancelled when the part ended.
        #expect(clock.sleepsLeft.isEmpty)
    }

    @Test func aPartsFailureIsThrownOn() async throws {
        let bounded = StopWithin(service: Broken(), limit: { .seconds(3) }, time: .driven(by: ManualClock()), logger: testLogger())
        await #expect(throws: Broken.Failure.self) { try await bounded.run() }
    }
}
