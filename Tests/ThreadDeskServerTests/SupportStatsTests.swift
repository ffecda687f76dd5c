import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore

/// Support's numbers: from the store (the same figures on SQLite and PostgreSQL), first responses
/// in support hours, as `/stats` words them and `GET /internal/stats` answers them.
@Suite("Support's numbers", .timeLimit(.minutes(3)))
struct SupportStatsTests {
    /// Monday 2026-12-07 08:00 UTC: support opens at 09:00.
    static let monday = try! Date("2026-12-07T08:00:00Z", strategy: .iso8601)
    static let hours = try! SupportHours("UTC Mon-Fri 09:00-17:00")

    static func at(_ minutes: Double) -> Date { monday.addingTimeInterval(minutes * 60) }

    /// Three conversations: one opened before the hours and answered 30 minutes into them, one
    /// answered in 10 minutes, one waiting; two rated (5 and 3); one reminder.
    static func seed(_ store: any UserStore) async throws {
        let users = (1...3).map { UserID("stats-\($0)")! }
        _ = try await store.conversationUserWrote(users[0], thread: Snowflake(1), at: at(0))
        let inHours: @Sendable (Date, Date) -> Double = { ConversationLog.supportSeconds(hours, from: $0, to: $1) }
        _ = try await store.conversationSupportWrote(users[0], thread: nil, at: at(90), byAgent: true, responseSeconds: { inHours($0, at(90)) })
        _ = try await store.closeConversation(users[0], at: at(120), by: .agent, dueBy: nil)
        _ = try await store.conversationUserWrote(users[1], thread: Snowflake(2), at: at(100))
        _ = try await store.conversationSupportWrote(users[1], thread: nil, at: at(110), byAgent: true, responseSeconds: { inHours($0, at(110)) })
        _ = try await store.closeConversation(users[1], at: at(160), by: .auto, dueBy: nil)
        for (user, score) in zip(users, [5, 3]) {
            let id = try #require(try await store.latestConversation(of: user)?.id)
            _ = try await store.rateConversation(id, owner: user, score: score, comment: nil, at: at(170))
        }
        let waiting = try await store.conversationUserWrote(users[2], thread: Snowflake(3), at: at(150)).conversation
        _ = try await store.markConversationReminded(waiting.id, waitingSince: at(150), at: at(180))
    }

    @Test func theFiguresAreTheSameOnEveryStore() async throws {
        let kinds: [(String, @Sendable () async throws -> any UserStore)] = [
            ("sqlite", { try SQLiteStore(path: temporaryStorePath()) }), ("memory", { MemoryStore() }),
        ]
        var results: [String: SupportStats] = [:]
        for (name, make) in kinds {
            let store = try await make()
            try await Self.seed(store)
            results[name] = try await Self.stats(store)
        }
        if ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"] != nil {
            results["postgres"] = try await withFreshPostgresSchema { url in
                try await PostgresStore.withRunning(url: url) { store in
                    try await Self.seed(store)
                    return try await Self.stats(store)
                }
            }
        }
        let sqlite = try #require(results["sqlite"])
        for (name, stats) in results { #expect(stats == sqlite, "\(name)") }
        #expect(sqlite.conversations == .init(opened: 3, answered: 2, closed: 2, waitingNow: 1, longestWaitSeconds: 3 * 3600 - 150 * 60))
        // In support hours: 30 minutes (opened at 08:00, answered at 09:30) and 10 minutes.
        #expect(sqlite.firstResponse == .init(count: 2, medianSeconds: 600, p90Seconds: 1800))
        #expect(sqlite.timeToClose == .init(count: 2, medianSeconds: 3600, p90Seconds: 7200))
        #expect(sqlite.ratings == .init(count: 2, average: 4, goodShare: 0.5))
        #expect(sqlite.reminders == 1 && sqlite.supportHours)
    }

    static func stats(_ store: any UserStore) async throws -> SupportStats {
        let totals = try await store.conversationTotals(app: .default, since: at(-60), until: at(180))
        return SupportStats(app: .default, days: 1, totals: totals, hours: hours, since: at(-60), until: at(180))
    }

    @Test func statsCommandAndInternalRouteShowTheAppsNumbers() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            try await server.settled()
            let (user, thread, _) = try await server.userWithThread()
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Done")
            try await server.settled()
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            #expect(try await RatingTests.rate(server, token: user.token, #"{"score":5}"#).status == .created)

            let command = try await DeskTests.run(server, "stats", in: thread, [DiscordEmulator.CommandOption(name: "days", type: 4, value: "7")])
            let text = try #require(command.content)
            #expect(command.ephemeral && text.contains("last 7 days") && text.contains("1 opened, 1 answered, 1 closed"))
            #expect(text.contains("Ratings: 5.0/5 average, 100% 4–5, 1 rating") && text.contains("Waiting now: 0"))

            let token = [HTTPField.Name.authorization: "Bearer \(Harness.metricsToken)"]
            let reply = try await server.request(.get, "/internal/stats?days=7", headers: HTTPFields(token.map { .init(name: $0.key, value: $0.value) }))
            #expect(reply.status == .ok)
            let stats = try reply.decode(SupportStats.self)
            #expect(stats.conversations.opened == 1 && stats.ratings.count == 1 && stats.days == 7 && stats.app == "default")
            #expect(try await server.request(.get, "/internal/stats").status == .unauthorized)
            for query in ["days=0", "days=367", "days=x", "app=nope"] {
                let bad = try await server.request(.get, "/internal/stats?\(query)", headers: HTTPFields(token.map { .init(name: $0.key, value: $0.value) }))
                #expect(bad.status == .badRequest && bad.errorCode == "invalid_query", "\(query)")
            }
        }
    }

    @Test func durationsAreWordedForPeople() {
        #expect(StatsCommands.duration(45) == "45 s" && StatsCommands.duration(720) == "12 min")
        #expect(StatsCommands.duration(3 * 3600 + 300) == "3 h 5 min" && StatsCommands.duration(2 * 86_400 + 4 * 3600) == "2 d 4 h")
        #expect(SupportStats.durations([]) == .init(count: 0))
        #expect(SupportStats.durations([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == .init(count: 10, medianSeconds: 5, p90Seconds: 9))
    }
}
