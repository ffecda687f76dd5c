import AssistEmulator
import DiscordEmulator
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// The provider's faults and the budgets on the server's clock, which the test drives: retries
/// wait what the provider asked, a hang ends at the deadline, a new UTC day gives a new budget.
/// Whatever happens, the user's message is delivered.
@Suite("Assistant faults and budgets", .timeLimit(.minutes(3)))
struct AssistFaultTests {
    /// Monday 23 November 2026, 12:00 UTC.
    static let noon = Date(timeIntervalSince1970: 1_795_435_200)

    @Test func aRateLimitAndAServerErrorAreRetriedThenTheDraftComes() async throws {
        let clock = ManualClock()
        try await DraftTests.withAssist(time: .driven(by: clock, from: Self.noon)) { server, assist in
            assist.script([.status(429, retryAfter: 2), .status(500), .answer("Restart the app, then sign in again.")])
            // (`accept`, not `send` or `userWithThread`: their settling does not move the clock the retries wait on.)
            let user = try await server.session()
            _ = try await server.accept("I cannot sign in", token: user.token)
            try await server.settled(driving: clock, step: .seconds(3))
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(assist.recordedRequests.count == 3)
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            #expect(note.content.contains("Restart the app, then sign in again."))
            #expect(try await server.metric(#"threaddesk_assist_requests_total{purpose="draft",outcome="ok"}"#) == 1)
            #expect(try await server.metric("threaddesk_assist_retries_total") == 2)
        }
    }

    @Test func aProviderThatHangsEndsAtTheDeadlineAndTheUserLosesNothing() async throws {
        let clock = ManualClock()
        try await DraftTests.withAssist(time: .driven(by: clock, from: Self.noon)) { server, assist in
            assist.setPermanentOutcome(.hang)
            let user = try await server.session()
            _ = try await server.accept("Hello?", token: user.token)
            // The attempt's 20 s, a backoff, the second attempt within the 30 s deadline.
            try await server.settled(driving: clock, step: .seconds(21))
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(try await DraftTests.shown(server, user.token).map(\.content) == ["Hello?"])
            #expect(server.emulator.messages(inThread: thread).contains { $0.content == "Hello?" })
            #expect(DraftTests.draftNotes(server, thread).isEmpty)
            #expect(try await server.metric(#"threaddesk_assist_requests_total{purpose="draft",outcome="timeout"}"#) == 1)
            _ = assist.release()
        }
    }

    @Test func aUsersBudgetIsSettledToWhatWasSpentAndComesBackTheNextDay() async throws {
        let clock = ManualClock()
        try await DraftTests.withAssist(time: .driven(by: clock, from: Self.noon), { $0.assist.tokensPerUserPerDay = 1000 }) { server, assist in
            assist.setPermanentOutcome(.answer("A short draft."))
            let (user, thread, _) = try await server.userWithThread(first: "First question")
            try await server.settled(driving: clock)
            #expect(DraftTests.draftNotes(server, thread).count == 1)
            // What the reservation held is settled to the provider's count.
            let key = AssistKey.user(try #require(UserID(user.userId)))
            let counted = assist.counters.promptTokens + assist.counters.completionTokens
            #expect(try await server.store.assistTokensUsed(key, day: "2026-11-23") == counted)
            // The next one would pass the limit with its estimate: refused, the provider not asked.
            _ = try await server.send("Second question", token: user.token)
            try await server.settled(driving: clock)
            #expect(assist.recordedRequests.count == 1)
            #expect(try await server.metric(#"threaddesk_assist_requests_total{purpose="draft",outcome="refused_budget_user"}"#) == 1)
            // A new UTC day, a new budget.
            clock.advance(by: .seconds(86_400))
            try await server.settled(driving: clock)
            _ = try await server.send("Third question", token: user.token)
            try await server.settled(driving: clock)
            #expect(assist.recordedRequests.count == 2)
            #expect(try #require(assist.recordedRequests.last).messages[1].content.contains("Third question"))
        }
    }
}
