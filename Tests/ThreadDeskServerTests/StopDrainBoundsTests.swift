import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import ThreadDeskCore
import TestSupport
@testable import ThreadDeskServer

/// The stop's one drain, counted from the listener's quiesce and ending every part's wait: a stop
/// whose listener or gateway took their time still ends within its grace.
@Suite("Stop: the drain begins at the quiesce and bounds the outbox")
struct StopDrainBoundsTests {
    @Test func theFirstConnectionToHearTheQuiesceBeginsTheDrain() throws {
        let clock = ManualClock()
        let time = ServerTime.driven(by: clock)
        let drain = ShutdownDrain(.seconds(9), time: time)
        let start = RequestArrivalStart(RequestArrivalHandler(limits: .init(timeout: .seconds(5), unreadBodyLimit: 100)), stop: drain)
        let channel = EmbeddedChannel(handler: start)
        clock.advance(by: .seconds(30))
        #expect(!drain.hasBegun)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(drain.hasBegun)
        // Counted from the quiesce, not from a later part's turn.
        clock.advance(by: .seconds(2))
        #expect(drain.left == .seconds(7))
        _ = try channel.finish()
    }

    @Test func theOutboxsDeliveriesUnderWayGetWhatIsLeftOfTheStopsDrain() async throws {
        let clock = ManualClock()
        let time = ServerTime.driven(by: clock)
        let stop = ShutdownDrain(.seconds(9), time: time)
        let runs = OutboxRuns(concurrency: 1, drain: .seconds(10), stop: stop, time: time, logger: testLogger())
        let ended = Mutex(false)
        let (cancelled, cancelledContinuation) = AsyncStream<Bool>.makeStream()
        let user = try #require(UserID("u1"))
        let owner = try #require(runs.take([user]).first)
        runs.start(owner) {
            // A delivery that would run on past any drain (Discord not answering).
            await withTaskCancellationHandler {
                try? await Task.sleep(for: .seconds(3_600))
            } onCancel: {
                cancelledContinuation.yield(true)
            }
        } ended: {
            ended.withLock { $0 = true }
        }
        // The listener and the gateway took 6 s of the stop's 9.
        stop.begin()
        clock.advance(by: .seconds(6))
        let draining = Task { await runs.drain() }
        try await clock.waitForSleepers(1)
        // 3 s, not the outbox's own 10.
        #expect(clock.sleepsLeft == [.seconds(3)])
        clock.advance(by: .seconds(3))
        var iterator = cancelled.makeAsyncIterator()
        #expect(await iterator.next() == true)
        await draining.value
        #expect(ended.withLock { $0 })
    }
}
