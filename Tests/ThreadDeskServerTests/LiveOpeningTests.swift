import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore

/// Opening `/v1/events`: turns taken after the token check, a bounded queue, and the token's first
/// use noted beside the opening instead of in its path.
@Suite("Live: stream openings", .timeLimit(.minutes(3)))
struct LiveOpeningTests {
    /// With every turn held and the queue full, an opening is answered 503 `busy` at once; a
    /// waiting one when its wait runs out on the server's clock; a made-up token 401 without
    /// taking a turn or a place. The gauges and the refusals' counter say so.
    @Test func openingsPastTheQueueAreTurnedAwayAndAMadeUpTokenNeverWaits() async throws {
        let clock = ManualClock()
        let entered = Watched(0)
        let release = Watched(false)
        try await withServer(time: .driven(by: clock), {
            $0.live.openingAtOnce = 1
            $0.live.openingQueue = 1
            $0.live.openingWait = .seconds(7)
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
            let (first, second, third) = (try await server.session(), try await server.session(), try await server.session())
            let opening = Task { try await EventStreamClient.open(port: port, token: first.token) }
            try await entered.wait(for: "the first opening in its turn") { $0 == 1 }
            #expect(try await server.metric("threaddesk_live_streams_opening") == 1)

            // Made up, or another user's token altered: 401 at once, no turn, no place.
            let forged = String(first.token.dropLast(4)) + (first.token.hasSuffix("AAAA") ? "BBBB" : "AAAA")
            for token in ["made-up-token", forged] {
                let refused = try await server.request(.get, "/v1/events", token: token)
                #expect(refused.status == .unauthorized)
            }
            #expect(try await server.metric("threaddesk_live_streams_waiting_to_open") == 0)
            #expect(entered.value == 1)

            // The second waits for a turn, on the server's clock.
            let waiting = Task { try await server.request(.get, "/v1/events", token: second.token) }
            try await clock.changes.wait(for: "the second opening's wait on the server's clock") { _ in clock.sleepsLeft.contains(.seconds(7)) }
            #expect(try await server.metric("threaddesk_live_streams_waiting_to_open") == 1)

            // The queue is full: the third is answered at once.
            let full = try await server.request(.get, "/v1/events", token: third.token)
            #expect(full.status == .serviceUnavailable)
            #expect(full.errorCode == "busy")
            #expect(full.headers[.retryAfter] == "2")
            #expect(try await server.metric(#"threaddesk_live_openings_refused_total{reason="full"}"#) == 1)

            // The second's wait runs out.
            clock.advance(by: .seconds(7))
            let waited = try await waiting.value
            #expect(waited.status == .serviceUnavailable)
            #expect(waited.errorCode == "busy")
            #expect(try await server.metric(#"threaddesk_live_openings_refused_total{reason="waited"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_http_unavailable_total{route="/v1/events",code="busy"}"#) == 2)
            #expect(try await server.metric("threaddesk_live_streams_waiting_to_open") == 0)

            // The first opens once its turn goes on, and gives the turn back: the next opens at once.
            release.update { $0 = true }
            let stream = try await opening.value
            defer { stream.close() }
            #expect(stream.status == 200)
            try await stream.next("the first stream's unread count") { $0.name == "unread" }
            #expect(try await server.metric("threaddesk_live_streams_opening") == 0)
            let later = try await LiveTests.stream(server, third.token)
            later.close()
        }
    }

    /// A new user's stream opens while something else holds the user's lock: the token's first
    /// use is noted beside the opening once the lock is free, and from then on the id is in use
    /// (the app key alone does not claim it).
    @Test func aStreamOpensWithoutWaitingForItsUsersLock() async throws {
        try await withServer({ $0.requestTimeout = .seconds(120) }) { server in
            let user = try await server.session(#"{"userId":"streaming-user"}"#)
            let id = try #require(UserID(user.userId))
            let (locked, release) = (Watched(false), Watched(false))
            let holder = Task {
                try await server.store.withUser(id, idempotencyKey: nil) { _ in
                    locked.update { $0 = true }
                    try await release.wait(for: "the test to free the user's lock") { $0 }
                }
            }
            try await locked.wait(for: "the user's lock held") { $0 }

            let stream = try await LiveTests.stream(server, user.token)
            defer { stream.close() }
            #expect(try await server.store.user(id)?.history.contains(.used) == false)

            release.update { $0 = true }
            try await holder.value
            try await server.settled()
            #expect(try await server.store.user(id)?.history.contains(.used) == true)
            let stranger = try await server.request(.post, "/v1/session", headers: ClaimTests.appKey, json: #"{"userId":"streaming-user"}"#)
            #expect(stranger.status == .conflict)
            #expect(stranger.errorCode == "user_claimed")
        }
    }

    /// A token used only for streams lives past the idle days: each opening notes its use (at most
    /// daily), beside the opening.
    @Test func aTokenUsedOnlyForStreamsLivesOn() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock)) { server in
            let user = try await server.session()
            clock.advance(by: .seconds(60 * 86_400))
            let stream = try await LiveTests.stream(server, user.token)
            stream.close()
            try await server.settled()
            let id = try #require(UserID(user.userId))
            let noted = try #require(try await server.store.user(id)?.tokenUsedAt[UserToken.hash(user.token)])
            let created = try #require(try await server.store.user(id)?.createdAt)
            // Day 60 (less a rounding of the dates' seconds), not day 0.
            #expect(noted.timeIntervalSince(created) > 59 * 86_400)
            clock.advance(by: .seconds(40 * 86_400))
            // Day 100: used on day 60, by the stream alone.
            #expect(try await server.request(.get, "/v1/messages", token: user.token).status == .ok)
        }
    }
}
