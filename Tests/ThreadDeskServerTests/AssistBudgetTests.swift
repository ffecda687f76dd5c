import AssistEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// About ten throwaway sessions from two addresses once spent an app's whole day of the
/// assistant: drafts and answers while away then stopped for everyone. What a user's own message
/// asks for is charged to their network too, and users no agent has answered share a part of the
/// app's day.
@Suite("The assistant's budgets per network and for new users", .timeLimit(.minutes(3)))
struct AssistBudgetTests {
    /// A user's first message, from `network` (through the trusted proxy on loopback).
    static func user(_ server: Harness, from network: String, writes text: String) async throws -> (token: String, thread: String) {
        let headers: HTTPFields = [.init("X-Forwarded-For")!: network, .init("X-App-Key")!: "test-app-key"]
        let opened = try await server.request(.post, "/v1/session", headers: headers, json: "{}")
        let token = try #require(opened.json["token"]?.stringValue)
        let userID = try #require(opened.json["userId"]?.stringValue)
        try await send(server, token: token, from: network, text)
        let thread = try #require(try await server.thread(of: userID))
        return (token, thread)
    }

    static func send(_ server: Harness, token: String, from network: String, _ text: String) async throws {
        let sent = try await server.request(
            .post, "/v1/messages", token: token, headers: [.init("X-Forwarded-For")!: network, .init("Idempotency-Key")!: UUID().uuidString],
            json: #"{"content":"\#(text)"}"#)
        #expect(sent.status == .created)
        try await server.settled()
    }

    /// What the app's budgets have spent today, as if earlier sessions had: `tokens` on `key`,
    /// on this UTC day and the next (a test that runs across midnight finds the day spent too).
    static func spend(_ tokens: Int, on key: String, _ server: Harness) async throws {
        for day in [Date(), Date().addingTimeInterval(3600)].map(AssistService.day(of:)) {
            #expect(try await server.store.reserveAssistTokens(tokens, day: day, limits: [key: 0]))
        }
    }

    @Test func aNetworkThatSpentItsDayGetsNoMoreDraftsAndAnotherNetworkDoes() async throws {
        try await DraftTests.withAssist({
            $0.trustedProxies = ["127.0.0.1"]
            ($0.assist.tokensPerDay, $0.assist.tokensPerUserPerDay, $0.assist.tokensPerNetworkPerDay) = (1_000_000, 0, 100_000)
        }) { server, assist in
            assist.setPermanentOutcome(.answer("Restart the app."))
            try await Self.spend(100_000, on: AssistKey.network("203.0.113.5"), server)

            let (_, spentThread) = try await Self.user(server, from: "203.0.113.5", writes: "My tides are wrong")
            #expect(DraftTests.draftNotes(server, spentThread).isEmpty)
            #expect(try await server.metric(#"threaddesk_assist_requests_total{purpose="draft",outcome="refused_budget_network"}"#) == 1)

            let (_, otherThread) = try await Self.user(server, from: "198.51.100.7", writes: "My tides are wrong too")
            #expect(DraftTests.draftNotes(server, otherThread).count == 1)
            #expect(assist.recordedRequests.count == 1)
        }
    }

    @Test func newUsersSpendOnlyTheirShareAndAUserAnAgentAnsweredIsServed() async throws {
        try await DraftTests.withAssist({
            $0.trustedProxies = ["127.0.0.1"]
            ($0.assist.tokensPerDay, $0.assist.tokensPerUserPerDay, $0.assist.tokensPerNetworkPerDay) = (100_000, 0, 0)
            $0.assist.newUsersShare = 50
        }) { server, assist in
            assist.setPermanentOutcome(.answer("Restart the app."))
            // A user an agent answered: known from then on.
            let (known, knownThread) = try await Self.user(server, from: "198.51.100.7", writes: "Hello")
            _ = try server.emulator.replyAsAgent(inThread: knownThread, content: "Hi, how can I help?")
            try await server.settled()
            let asked = assist.recordedRequests.count

            // New users together spent half of the app's day.
            try await Self.spend(50_000, on: AssistKey.newUsers(.default), server)
            let (_, newThread) = try await Self.user(server, from: "203.0.113.9", writes: "It crashes")
            #expect(DraftTests.draftNotes(server, newThread).isEmpty)
            #expect(try await server.metric(#"threaddesk_assist_requests_total{purpose="draft",outcome="refused_budget_new_users"}"#) == 1)
            #expect(assist.recordedRequests.count == asked)

            try await Self.send(server, token: known, from: "198.51.100.7", "It crashes for me as well")
            #expect(assist.recordedRequests.count == asked + 1)
            #expect(try await server.store.openDrafts(thread: try #require(Snowflake(knownThread))).count == 1)
        }
    }

    @Test func theBudgetsAreReadFromTheEnvironmentAndTheAppsFile() throws {
        var settings = AssistSettings()
        var problem = ConfigurationProblem(missing: [], invalid: [])
        let values = ["ASSIST_TOKENS_PER_NETWORK_PER_DAY": "1234", "ASSIST_NEW_USERS_SHARE": "20"]
        settings.read({ values[$0] }, problem: &problem)
        #expect(problem.invalid.isEmpty && settings.tokensPerNetworkPerDay == 1234 && settings.newUsersShare == 20)
        let bad = ["ASSIST_NEW_USERS_SHARE": "101", "ASSIST_TOKENS_PER_NETWORK_PER_DAY": "-1"]
        settings.read({ bad[$0] }, problem: &problem)
        #expect(problem.invalid.contains { $0.hasPrefix("ASSIST_NEW_USERS_SHARE") } && problem.invalid.contains { $0.hasPrefix("ASSIST_TOKENS_PER_NETWORK_PER_DAY") })
        var complaints: [String] = []
        let overrides = AssistOverrides.read(["tokensPerNetworkPerDay": 10, "newUsersShare": 75], relativeTo: URL(fileURLWithPath: "/")) { complaints.append($0) }
        #expect(complaints.isEmpty && overrides?.tokensPerNetworkPerDay == 10 && overrides?.newUsersShare == 75)
        _ = AssistOverrides.read(["newUsersShare": 150], relativeTo: URL(fileURLWithPath: "/")) { complaints.append($0) }
        #expect(complaints == ["assist.newUsersShare (a whole percentage, 0 to 100)"])
    }
}
