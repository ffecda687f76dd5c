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
        /// Says when the service it runs (the timed one) has returned, its handler gone with it.
        struct Then: Service {
            let service: any Service
            let ended: AsyncStream<Void>.Continuation
            func run() async throws {
                try await service.run()
                ended.yield()
            }
        }
        let (ended, endedContinuation) = AsyncStream<Void>.makeStream()
        let services: [any Service] = [
            record.timed(Slow(description: "hub", takes: .seconds(1), clock: clock)), Then(service: record.timed(Done()), ended: endedContinuation),
        ]
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: .ignore) },
                logger: testLogger()))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // It ran in the group and ended with no stop in sight (a one-off's work).
            var iterator = ended.makeAsyncIterator()
            await iterator.next()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(record.stopped.map(\.name) == ["hub"])
        #expect(record.summary() == "hub +0.000 s took 1.000 s")
    }

    @Test func thePublicListenersPartRunsFromTheDrainsStartToTheFirstServiceToHear() async throws {
        let clock = ManualClock()
        let time = ServerTime.driven(by: clock)
        let drain = ShutdownDrain(.seconds(9), time: time)
        let record = StopRecord(time: time, drain: drain)
        let group = ServiceGroup(
            services: [record.timed(Slow(description: "hub", takes: .seconds(1), clock: clock))], gracefulShutdownSignals: [], logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // The listener quiesced, and its connections took 2.5 s to close.
            drain.begin()
            clock.advance(by: .milliseconds(2_500))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(record.summary() == "public listener +0.000 s took 2.500 s; hub +2.500 s took 1.000 s")
    }

    @Test func secondsHaveThreeDecimals() {
        #expect(StopRecord.seconds(.milliseconds(9_604)) == "9.604")
        #expect(StopRecord.seconds(.milliseconds(40)) == "0.040")
        #expect(StopRecord.seconds(.zero) == "0.000")
    }
}
