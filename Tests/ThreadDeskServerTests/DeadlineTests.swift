import DiscordEmulator
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOPosix
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer

/// No request waits forever: a Discord that never answers costs a 503 within the request's
/// deadline, and the user's lock is free again for the next request.
@Suite("Deadlines", .timeLimit(.minutes(1)))
struct DeadlineTests {
    /// Long enough that a busy machine answers the first, ordinary request well inside it.
    static let requestTimeout: Duration = .seconds(10)

    @Test func aDiscordCallThatNeverAnswersEndsIn503WithinTheDeadlineAndTheUserGoesOn() async throws {
        // The Discord client's own budget is past the test's time limit: only the request's
        // deadline can end the call.
        try await withServer({ $0.requestTimeout = Self.requestTimeout; $0.discordBudget = .seconds(120) }) { server in
            let user = try await server.session()
            let sent = try await server.send("first", token: user.token)
            let id = try #require(sent.json["id"]?.stringValue)
            // Past every deadline: Discord accepts the connection and never answers. An edit
            // calls Discord while the request waits (a send no longer does: the outbox takes it).
            server.emulator.setLatency(.seconds(600))
            let started = ContinuousClock.now
            // Two requests of the same user: the second queues behind the first's lock.
            async let first = server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"never answered"}"#)
            async let second = server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"queued behind it"}"#)
            let answers = try await [first, second]
            let elapsed = started.duration(to: .now)
            for answer in answers {
                #expect(answer.status == .serviceUnavailable)
                #expect(answer.headers[.retryAfter] != nil)
                #expect(["timeout", "discord_unavailable"].contains(answer.errorCode))
            }
            // One deadline covers the queued request's wait for the lock and its own call: a
            // deadline that started again after the lock would take twice the timeout. (The
            // rest is room for a busy machine.)
            #expect(elapsed < Self.requestTimeout * 1.8, "took \(elapsed)")

            server.emulator.setLatency(.zero)
            #expect(try await server.send("after the outage", token: user.token).status == .created)
            #expect(try await server.messages(token: user.token).last?["delivery"] == "sent")
        }
    }

    @Test func theWaitWatchdogNamesTheRequestTheLockAndTheCall() async throws {
        let lines = LogCapture()
        try await withServer(logger: lines.logger, {
            $0.debugWaitThreshold = .milliseconds(200)
            $0.requestTimeout = Self.requestTimeout
        }) { server in
            let user = try await server.session()
            let sent = try await server.send("first", token: user.token)
            let id = try #require(sent.json["id"]?.stringValue)
            // Far past the threshold, so the watchdog (every 50 ms) sees each wait even on a busy
            // machine; inside the harness's Discord budget (3 s). An edit calls Discord while the
            // request waits (sends and diagnostics go through the outbox instead).
            server.emulator.setLatency(.milliseconds(2500))
            async let slow = server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"slow"}"#)
            async let queued = server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"queued"}"#)
            _ = try await [slow, queued]
            let log = lines.text
            #expect(log.contains("Still waiting: Discord PATCH /channels/{channel_id}/messages/{message_id} has waited"), "\(log)")
            #expect(log.contains("(for PATCH /v1/messages/\(id))"))
            // The lock is named by the user's fingerprint: an id may be a credential.
            let fingerprint = try #require(UserID(user.userId)).logValue
            #expect(log.contains("Still waiting: holding the lock of \(fingerprint)"))
            #expect(log.contains("Still waiting: waiting for the lock of \(fingerprint)"))
            #expect(!log.contains(user.userId))
            #expect(log.contains("Still waiting: PATCH /v1/messages/\(id) has waited"))
        }
    }

    @Test func aConnectionThatStopsHalfWayThroughItsRequestIsClosed() async throws {
        try await withServer({ $0.idleTimeout = .milliseconds(500) }) { server in
            let port = try #require(server.client.port)
            let slow = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            // Half a request, then nothing (slowloris).
            try await slow.writeAndFlush(ByteBuffer(string: "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Le")).get()
            // Generous, for a busy machine: without the idle timeout it stays open for good.
            let wasClosed = await slow.closes(within: .seconds(120))
            #expect(wasClosed, "the server kept a half-sent request's connection open")
            if !wasClosed { try? await slow.close() }
            #expect(try await server.request(.get, "/health").status == .ok)
        }
    }
}
