import ServiceLifecycle
import Synchronization
import Testing
import TestSupport
@testable import ThreadDeskServer

/// The stop's record: each service's turn and how long it took, in the order they stopped, so a
/// stop past its grace says where its time went.
@Suite("Stop: the record of each service's stop")
struct StopRecordTests {
    /// Hears the stop, then takes `takes` of the driven clock to end.
    private struct Slow: Service, CustomStringConvertible {
        let description: String
        let takes: Duration
        let clock: ManualClock

        func run() async throws {
            try? await gracefulShutdown()
            clock.advance(by: takes)
        }
    }

    @Test func eachServiceIsNamedWithItsTurnAndItsTimeInStopOrder() async throws {
        let clock = ManualClock()
        let record = StopRecord(time: .driven(by: clock))
        let services: [any Service] = [
            record.timed(Slow(description: "store", takes: .milliseconds(250), clock: clock)),
            record.timed(Slow(description: "hub", takes: .milliseconds(4_602), clock: clock)),
            record.timed(Slow(description: "receipts", takes: .milliseconds(2), clock: clock)),
            record.timed(Slow(description: "gateway", takes: .milliseconds(1_500), clock: clock), name: "the gateway"),
        ]
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [], logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // Stopped from the last started back; the receipts' 2 ms are counted, not named.
        #expect(record.stopped.map(\.name) == ["the gateway", "receipts", "hub", "store"])
        #expect(record.summary() == "the gateway +0.000 s took 1.500 s; hub +1.502 s took 4.602 s; store +6.104 s took 0.250 s; 1 more under 0.010 s each")
    }

    @Test func aServiceThatEndedBeforeTheStopIsLeftOut() async throws {
        let clock = ManualClock()
        let record = StopRecord(time: .driven(by: clock))
        struct Done: Service {
            func run() async throws {}
        }
        // Ran and ended with no stop in sight (a one-off's work).
        try await record.timed(Done()).run()
        let group = ServiceGroup(
            services: [record.timed(Slow(description: "hub", takes: .seconds(1), clock: clock))], gracefulShutdownSignals: [], logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(record.stopped.map(\.name) == ["hub"])
        #expect(record.summary() == "hub +0.000 s took 1.000 s")
    }

    @Test func secondsHaveThreeDecimals() {
        #expect(StopRecord.seconds(.milliseconds(9_604)) == "9.604")
        #expect(StopRecord.seconds(.milliseconds(40)) == "0.040")
        #expect(StopRecord.seconds(.zero) == "0.000")
    }
}
