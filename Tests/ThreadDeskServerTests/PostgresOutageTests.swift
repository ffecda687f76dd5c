import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("PostgreSQL restarting under load", .enabled(if: postgresIsAvailable), .timeLimit(.minutes(2)))
struct PostgresOutageTests {
    @Test func aRestartCosts503sForAMomentAndLosesOrDoublesNothing() async throws {
        try await withFreshPostgresSchema { url in
            try await withServer(store: url) { server in
                let user = try await server.session()
                #expect(try await server.send("before", token: user.token, key: "before").status == .created)

                // Messages sent one after another, each retried with its key until accepted, while
                // the database restarts underneath: the restart begins once five are in, and the
                // last message waits until it is over.
                var restart: Task<ContinuousClock.Instant, any Error>?
                let started = ContinuousClock.now
                for index in 0..<40 {
                    if index == 5 {
                        restart = Task {
                            try await restartPostgres()
                            return ContinuousClock.now
                        }
                    }
                    if index == 39, let restart { _ = try await restart.value }
                    // PostgreSQL is another process: its restart is polled for, as an app retries.
                    try await eventually("message \(index) accepted") {
                        let reply = try await server.send("m\(index)", token: user.token, key: "k\(index)")
                        if reply.status == .created { return true }
                        #expect(reply.status == .serviceUnavailable, "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                        #expect(reply.headers[.retryAfter] != nil)
                        return false
                    }
                }
                let finished = ContinuousClock.now
                let restarted = try #require(try await restart?.value)
                // The restart really happened in the middle of the run. (Short outages are mostly
                // absorbed by the pool reconnecting; anything refused was a 503 with Retry-After.)
                #expect(restarted < finished)
                #expect(started.duration(to: finished) < .seconds(60))
                let thread = try #require(try await server.thread(of: user.userId))
                // Deliveries the restart failed wait out their backoff on the server's (real)
                // clock, PostgreSQL being another process: polled for, then checked whole.
                let expected = ["before"] + (0..<40).map { "m\($0)" }
                try await eventually("every accepted message delivered", timeout: .seconds(90)) {
                    server.emulator.messages(inThread: thread).count >= expected.count
                }
                try await server.settled()
                #expect(server.emulator.messages(inThread: thread).map(\.content) == expected)
                #expect(try await server.request(.get, "/ready").status == .ok)
            }
        }
    }
}
