import DiscordEmulator
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore

@Suite("The user's data: retention")
struct RetentionTests {
    static let day: Duration = .seconds(86_400)

    /// With `RETENTION_DAYS`, users inactive that long are erased as `DELETE /v1/me` erases them
    /// (thread locked with a note, every row gone); users active since, by their own action or
    /// support's reply, stay. The server's clock is the test's: a year passes when the test says.
    @Test func inactiveUsersAreErasedAndOnlyThey() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock)) { configuration in
            configuration.privacy.retention = Self.day * 365
            // Users come back after 300 days here: their tokens must outlive SESSION_IDLE_DAYS.
            configuration.sessions.idleAfter = nil
        } _: { server in
            let rounds = { try await server.metric(#"threaddesk_retention_rounds_total{outcome="done"}"#) }
            /// Moves the clock `duration` on (past the job's next round), then waits for that round.
            let passes = { (duration: Duration) in
                let before = try await rounds()
                clock.advance(by: duration)
                try await server.settled()
                try #require(try await rounds() > before, "a retention round")
            }
            try await server.settled()
            try #require(try await rounds() == 1, "the first round, at start")
            let idle = try await server.userWithThread(first: "anyone there?")
            let writes = try await server.userWithThread(device: String(repeating: "cd", count: 32), first: "me again later")
            let answered = try await server.userWithThread(device: String(repeating: "ef", count: 32), first: "answer me later")
            let claimed = try await server.session()

            // 300 days on: one user writes again, support answers another.
            try await passes(Self.day * 300)
            #expect(try await server.send("still here", token: writes.session.token).status == .created)
            try server.emulator.replyAsAgent(inThread: answered.thread, content: "Sorry for the wait")
            #expect(try await server.messages(token: answered.session.token).count == 2)
            #expect(try await server.metric(#"threaddesk_users_erased_total{reason="retention"}"#) == 0)

            // 400 days after the start: the first user and the bare claim have been quiet 400 days.
            try await passes(Self.day * 100)
            #expect(try await server.metric(#"threaddesk_users_erased_total{reason="retention"}"#) == 2)
            #expect(try await server.store.user(UserID(idle.session.userId)!) == nil)
            #expect(try await server.store.user(UserID(claimed.userId)!) == nil)
            #expect(try await server.request(.get, "/v1/messages", token: idle.session.token).status == .unauthorized)
            let settled = try #require(server.emulator.threads().first { $0.id == idle.thread })
            #expect(settled.locked && settled.archived)
            #expect(server.emulator.messages(inThread: idle.thread).last?.content.contains("inactive past the retention period") == true)
            for kept in [writes, answered] {
                #expect(try await server.store.user(UserID(kept.session.userId)!) != nil)
                #expect(server.emulator.threads().first { $0.id == kept.thread }?.locked == false)
            }

            // A year after their last activity, the other two go as well.
            try await passes(Self.day * 266)
            #expect(try await server.metric(#"threaddesk_users_erased_total{reason="retention"}"#) == 4)
            #expect(try await server.store.user(UserID(writes.session.userId)!) == nil)
            #expect(try await server.store.user(UserID(answered.session.userId)!) == nil)
        }
    }

    /// Off by default: no retention job runs; with `RETENTION_DAYS`, one does.
    @Test func retentionRunsOnlyWhenConfigured() throws {
        func jobs(_ configure: (inout ServerConfiguration) -> Void) -> Int {
            var configuration = ServerConfiguration(
                discordToken: "token", discordAPIURL: "http://127.0.0.1:1/api/v10", guildID: "1", forumChannelID: "2", appKey: "app")
            configure(&configuration)
            let root = ServerRoot(
                configuration: configuration, store: MemoryStore(), metrics: ServerMetrics(), inProcessGateway: false, time: .system,
                logger: testLogger())
            return root.services.filter { $0.service is RetentionService }.count
        }
        #expect(jobs { _ in } == 0)
        #expect(jobs { $0.privacy.retention = Self.day * 30 } == 1)
        let configured = try ServerConfiguration(environment: ConfigurationTests.complete.merging(["RETENTION_DAYS": "30"]) { $1 })
        #expect(configured.privacy.retention == Self.day * 30)
    }
}
