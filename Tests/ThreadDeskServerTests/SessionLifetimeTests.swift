import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// Tokens do not live for ever: one left unused for `SESSION_IDLE_DAYS` ends, and the user can
/// end every one of theirs at once (`DELETE /v1/sessions`).
@Suite("Session lifetime") struct SessionLifetimeTests {
    /// On the server's clock: a token in use lives on (its use noted at most daily), one unused
    /// for the idle days ends, and is gone from the store; `off` keeps tokens.
    @Test func tokensUnusedForTheIdleDaysEnd() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock)) { server in
            let used = try await server.session()
            let idle = try await server.session()
            #expect(try await status(server, used.token) == .ok)
            clock.advance(by: .seconds(60 * 86_400))
            #expect(try await status(server, used.token) == .ok)
            clock.advance(by: .seconds(40 * 86_400))
            // Day 100: the one used on day 60 lives; the one unused since day 0 has ended.
            #expect(try await status(server, used.token) == .ok)
            let refused = try await server.request(.get, "/v1/messages", token: idle.token)
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "unauthorized")
            let record = try #require(try await server.store.user(UserID(idle.userId)!))
            #expect(!record.holdsToken(hash: UserToken.hash(idle.token)))
            clock.advance(by: .seconds(91 * 86_400))
            #expect(try await status(server, used.token) == .unauthorized)
        }
        try await withServer(time: .driven(by: clock), { $0.sessions.idleAfter = nil }) { server in
            let kept = try await server.session()
            clock.advance(by: .seconds(400 * 86_400))
            #expect(try await status(server, kept.token) == .ok)
        }
    }

    private func status(_ server: Harness, _ token: String) async throws -> HTTPResponse.Status {
        try await server.request(.get, "/v1/messages", token: token).status
    }

    /// Signing out everywhere ends every token of the user, and their streams; other users keep theirs.
    @Test func signingOutEverywhereEndsEveryTokenAndStream() async throws {
        try await withServer { server in
            let port = try #require(server.client.port)
            let user = try await server.session()
            let other = try await server.session("{\"userId\":\"\(user.userId)\"}", token: user.token)
            let stranger = try await server.session()
            let stream = try await EventStreamClient.open(port: port, token: other.token)
            defer { stream.close() }
            try await stream.next("the first unread count") { $0.name == "unread" }

            #expect(try await server.request(.delete, "/v1/sessions", token: user.token).status == .noContent)
            try await stream.ends("the other token's stream ended")
            #expect(try await status(server, user.token) == .unauthorized)
            #expect(try await status(server, other.token) == .unauthorized)
            #expect(try await status(server, stranger.token) == .ok)
            #expect(try await server.request(.delete, "/v1/sessions", token: user.token).errorCode == "unauthorized")
        }
    }
}

@Suite("Session settings") struct SessionSettingsTests {
    @Test func idleDaysAreReadFromTheEnvironment() throws {
        #expect(try ServerConfiguration(environment: ConfigurationTests.complete).sessions.idleAfter == .seconds(90 * 86_400))
        try expectDays("SESSION_IDLE_DAYS", in: ConfigurationTests.complete) { $0.sessions.idleAfter }
    }
}

/// `variable` in `environment` is read by `setting` as whole days (1 to 36500) or `off`, and
/// anything else stops the configuration.
func expectDays(
    _ variable: String, in environment: [String: String], _ setting: (ServerConfiguration) -> Duration?
) throws {
    var environment = environment
    for (text, days) in [("30", Duration?.some(.seconds(30 * 86_400))), ("off", nil)] {
        environment[variable] = text
        #expect(setting(try ServerConfiguration(environment: environment)) == days, "\(variable)=\(text)")
    }
    for wrong in ["0", "-1", "36501", "a year"] {
        environment[variable] = wrong
        #expect(throws: (any Error).self, "\(variable)=\(wrong)") { try ServerConfiguration(environment: environment) }
    }
}
