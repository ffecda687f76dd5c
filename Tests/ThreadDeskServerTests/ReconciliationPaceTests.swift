import DiscordGateway
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskServer

/// The periodic reconciliation is a safety net: with the feed live it checks threads at
/// `reconcileThreadsPerSecond`, on the server's clock, and leaves Discord's budget to users; after
/// a gap it goes at full speed.
@Suite("Reconciliation pace", .timeLimit(.minutes(2)))
struct ReconciliationPaceTests {
    @Test func aTimersRoundWithTheFeedLiveChecksTwoThreadsASecond() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), {
            $0.mirror.reconcileInterval = .seconds(60)
            $0.mirror.reconcileThreadsPerSecond = 2
        }) { server in
            for index in 0..<5 { _ = try await server.userWithThread(device: String(format: "%064x", index + 1)) }
            // A gap: every thread is checked at once, and this shows what one thread's check reads.
            let runs = try await server.metric("threaddesk_catch_ups_total")
            let before = MirrorTests.messageReads(server)
            #expect(try await server.forward(try MirrorTests.events([.gap])).status == .ok)
            try await MirrorTests.reconciled(server, runs: runs + 1)
            let perThread = (MirrorTests.messageReads(server) - before) / 5
            try #require(perThread >= 1 && MirrorTests.messageReads(server) - before == 5 * perThread)

            // The feed is live; the timer's round comes.
            #expect(try await server.forward(try MirrorTests.events([.alive])).status == .ok)
            let start = MirrorTests.messageReads(server)
            let timerRuns = try await server.metric("threaddesk_catch_ups_total")
            clock.advance(by: .seconds(60))
            for (batch, checked) in [2, 4].enumerated() {
                // Each second's threads, then the round waits for the clock.
                // (Its reads come before it sleeps: each new sleeper on the clock looks again.)
                try await clock.changes.wait(for: "batch \(batch + 1): \(checked) threads checked, then a second's wait") { _ in
                    MirrorTests.messageReads(server) - start == checked * perThread
                        && clock.nextDeadline == clock.now.advanced(by: .seconds(1))
                }
                #expect(try await server.metric("threaddesk_catch_ups_total") == timerRuns)
                #expect(MirrorTests.messageReads(server) - start == checked * perThread)
                clock.advance(by: .seconds(1))
            }
            try await server.settled()
            try #require(try await server.metric("threaddesk_catch_ups_total") == timerRuns + 1, "the round done")
            #expect(MirrorTests.messageReads(server) - start == 5 * perThread)
        }
    }
}
