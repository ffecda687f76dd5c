import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
@testable import ThreadDeskServer
import ThreadDeskStore

/// One token cannot fill the queue of stream openings: its limits are charged, and its openings
/// under way counted against the streams a user may hold, before it takes a place.
@Suite("Live: openings one user may queue", .timeLimit(.minutes(3)))
struct LiveOpeningFairnessTests {
    @Test func oneTokenTakesAtMostItsStreamsOfTheQueueAndItsSpentReadsNone() async throws {
        // The server's clock never moves: no opening's wait for its turn runs out.
        let clock = ManualClock()
        let entered = Watched(0)
        let release = Watched(false)
        try await withServer(time: .driven(by: clock), {
            $0.live.openingAtOnce = 1
            $0.live.openingQueue = 9
            $0.quotas.readsPerUser = QuotaLimit(20, per: .seconds(60))
            // The first opening holds its turn until the test gives it back.
            $0.live.inTurn = {
                guard entered.update({ count -> Bool in
                    count += 1
                    return count == 1
                }) else { return }
                try? await release.wait(for: "the test to give the first turn back") { $0 }
            }
        }) { server in
            let port = try #require(server.client.port)
            let (holder, greedy, other, spent) = (
                try await server.session(), try await server.session(), try await server.session(), try await server.session()
            )
            let first = Task { try await EventStreamClient.open(port: port, token: holder.token) }
            try await entered.wait(for: "the first opening in its turn") { $0 == 1 }

            // Ten openings of one token: as many as a user may hold (8) wait, the rest are told at once.
            let answered = Watched<[UInt]>([])
            let greedyOpenings = (0..<10).map { _ in
                Task {
                    let stream = try await EventStreamClient.open(port: port, token: greedy.token)
                    answered.update { $0.append(stream.status) }
                    return stream
                }
            }
            try await eventually("every opening of the token waiting or answered") {
                try await server.metric("threaddesk_live_streams_waiting_to_open") + Double(answered.value.count) == 10
            }
            #expect(answered.value == [429, 429], "the token's openings past its streams: \(answered.value)")

            // Another user still finds a place, and waits for its turn.
            let otherOpening = Task { try await EventStreamClient.open(port: port, token: other.token) }
            try await eventually("the other user's opening waiting") {
                try await server.metric("threaddesk_live_streams_waiting_to_open") == 9
            }

            // A user whose reads are spent is refused by its limit, not by the full queue.
            for _ in 0..<20 { _ = try await server.request(.get, "/v1/unread", token: spent.token) }
            let refused = try await server.request(.get, "/v1/events", token: spent.token)
            #expect(refused.status == .tooManyRequests && refused.errorCode == "rate_limited", "\(refused.status) \(refused.errorCode ?? "")")

            release.update { $0 = true }
            let otherStream = try await otherOpening.value
            defer { otherStream.close() }
            #expect(otherStream.status == 200)
            try await first.value.close()
            for opening in greedyOpenings { try await opening.value.close() }
            #expect(answered.value.filter { $0 == 200 }.count == 8)
        }
    }
}
