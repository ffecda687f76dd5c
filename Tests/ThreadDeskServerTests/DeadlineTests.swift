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
    static let requestTimeout: Duration = .seconds(2)
    /// Scheduling on a busy 2-core machine, on top of the deadline.
    static let slack: Duration = .seconds(3)

    @Test func aDiscordCallThatNeverAnswersEndsIn503WithinTheDeadlineAndTheUserGoesOn() async throws {
        try await withServer({ $0.requestTimeout = Self.requestTimeout }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            // Past every deadline: Discord accepts the connection and never answers.
            server.emulator.setLatency(.seconds(600))
            let started = ContinuousClock.now
            // Two requests of the same user: the second queues behind the first's lock.
            async let first = server.send("never answered", token: user.token)
            async let second = server.send("queued behind it", token: user.token)
            let answers = try await [first, second]
            let elapsed = started.duration(to: .now)
            for answer in answers {
                #expect(answer.status == .serviceUnavailable)
                #expect(answer.headers[.retryAfter] != nil)
                #expect(["timeout", "discord_unavailable"].contains(answer.errorCode))
            }
            #expect(elapsed < Self.requestTimeout + Self.slack, "took \(elapsed)")

            server.emulator.setLatency(.zero)
            #expect(try await server.send("after the outage", token: user.token).status == .created)
        }
    }

    @Test func theWaitWatchdogNamesTheRequestTheLockAndTheCall() async throws {
        let lines = LogCapture()
        try await withServer(logger: lines.logger, {
            $0.debugWaitThreshold = .milliseconds(200)
            $0.requestTimeout = .seconds(5)
        }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            server.emulator.setLatency(.milliseconds(1200))
            async let slow = server.send("slow", token: user.token)
            async let queued = server.send("queued", token: user.token)
            _ = try await [slow, queued]
            let log = lines.text
            #expect(log.contains("Still waiting: Discord POST /channels/{channel_id}/messages has waited"))
            #expect(log.contains("(for POST /v1/messages)"))
            // The lock is named by the user's fingerprint: an id may be a credential.
            let fingerprint = try #require(UserID(user.userId)).logValue
            #expect(log.contains("Still waiting: holding the lock of \(fingerprint)"))
            #expect(log.contains("Still waiting: waiting for the lock of \(fingerprint)"))
            #expect(!log.contains(user.userId))
            #expect(log.contains("Still waiting: POST /v1/messages has waited"))
        }
    }

    @Test func aConnectionThatStopsHalfWayThroughItsRequestIsClosed() async throws {
        try await withServer({ $0.idleTimeout = .milliseconds(500) }) { server in
            let port = try #require(server.client.port)
            let slow = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            // Half a request, then nothing (slowloris).
            try await slow.writeAndFlush(ByteBuffer(string: "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Le")).get()
            let wasClosed = await slow.closes(within: .seconds(5))
            #expect(wasClosed, "the server kept a half-sent request's connection open")
            if !wasClosed { try? await slow.close() }
            #expect(try await server.request(.get, "/health").status == .ok)
        }
    }
}
