import DiscordEmulator
import DiscordREST
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore

/// Erasure where a thread is not plainly the store's: one an attempt made whose answer was lost,
/// and one whose status another replica still means to show.
@Suite("The user's data: erasure's edges")
struct ErasureEdgeTests {
    @Test func aThreadWhoseCreationAnswerWasLostIsSettledByTheErasure() async throws {
        // The server's clock is the test's: the delivery's retry (30 s away, beyond what
        // `settled(driving:)` passes) does not come before the erasure.
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1); $0.outbox.retryBase = .seconds(30) }) { server in
            let user = try await server.session()
            // Discord makes the thread but its answer is lost: the message waits in the outbox for
            // its next attempt, its thread made but not known to the store.
            server.emulator.loseAnswers("POST", "/channels/{channel_id}/threads")
            let lost = try await server.accept("please forget me", token: user.token, key: "first")
            #expect(lost.status == .created)
            try await server.settled(driving: clock)
            let made = try #require(server.emulator.threads().first, "Discord made the thread")
            #expect(try await server.thread(of: user.userId) == nil, "the store never kept it")

            #expect(try await server.request(.delete, "/v1/me", token: user.token).status == .noContent)
            let settled = try #require(server.emulator.threads().first { $0.id == made.id })
            #expect(settled.archived && settled.locked)
            let note = try #require(server.emulator.messages(inThread: made.id).last)
            #expect(note.authorIsBot && note.content.contains("asked for their data to be deleted"))
        }
    }

    /// Another replica that still means to show a status in the thread (it heard a message just
    /// before) leaves the erased user's thread alone: locked and archived, not a call to it.
    @Test func statusTagsOfAnotherReplicaNeverTouchAnErasedUsersThread() async throws {
        try await withServer({ $0.statusTags = StatusTagNames() }) { server in
            let (user, thread, _) = try await server.userWithThread()
            try await server.settled()
            try #require(try await server.store.globalValue(StatusTags.key(Snowflake(thread)!)) != nil, "the thread's status noted")
            #expect(try await server.request(.delete, "/v1/me", token: user.token).status == .noContent)
            let settled = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(settled.archived && settled.locked)

            let other = StatusTags(
                names: StatusTagNames(), discord: server.discordClient, store: server.store, feed: nil,
                catalog: server.configuration.catalog, logger: testLogger(), time: .system)
            let touches = { server.emulator.recordedRequests.filter { $0.path.hasSuffix("/channels/\(thread)") && $0.method != "GET" }.count }
            let before = touches()
            other.conversation(in: Snowflake(thread)!, isNow: .needsReply)
            #expect(await other.round(), "the round ends with nothing left to do")
            #expect(touches() == before)
            let after = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(after.archived && after.locked)
        }
    }

    /// Retention's erasure posts its note, then Discord fails to lock the thread: nothing is
    /// erased, and the note (which the gateway brings into the mirror) is no activity of the user's,
    /// so the next round erases them instead of waiting another year.
    @Test func aRetentionErasureThatFailsAfterItsNoteLeavesTheUserInactive() async throws {
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock)) {
            $0.privacy.retention = .seconds(365 * 86_400)
            $0.discordBudget = .seconds(1)
        } _: { server in
            let rounds = {
                try await server.metric(#"threaddesk_retention_rounds_total{outcome="done"}"#)
                    + server.metric(#"threaddesk_retention_rounds_total{outcome="failed"}"#)
            }
            let passes = { (duration: Duration) in
                let before = try await rounds()
                clock.advance(by: duration)
                // Discord's retries within the budget pass as the round waits for them.
                try await server.settled(driving: clock)
                try #require(try await rounds() > before, "a retention round")
            }
            try await server.settled()
            try #require(server.emulator.counters.identifies >= 1, "the gateway up")
            #expect(try await rounds() == 1, "the first round, at start")
            let idle = try await server.userWithThread(first: "anyone there?")
            let id = try #require(UserID(idle.session.userId))

            // The note goes through; the lock after it fails, and so does taking the note back
            // (Discord half away), however often they are tried.
            server.emulator.failRequests("PATCH", "/channels/{channel_id}", count: 100_000)
            server.emulator.failRequests("DELETE", "/channels/{channel_id}/messages/{message_id}", count: 100_000)
            try await passes(.seconds(400 * 86_400))
            #expect(try await server.store.user(id) != nil, "nothing erased while Discord failed")
            let note = try #require(server.emulator.messages(inThread: idle.thread).last)
            #expect(note.content.contains("inactive past the retention period"))
            try await server.settled()
            try #require(try await server.mirrored(note.id) != nil, "the note in the mirror")

            server.emulator.failRequests("PATCH", "/channels/{channel_id}", count: 0)
            server.emulator.failRequests("DELETE", "/channels/{channel_id}/messages/{message_id}", count: 0)
            try await passes(.seconds(3600))
            #expect(try await server.store.user(id) == nil)
            #expect(try await server.metric(#"threaddesk_users_erased_total{reason="retention"}"#) == 1)
        }
    }

    /// The note says the data is gone only once it is: when Discord will not lock the thread, the
    /// erasure fails, and the note it posted goes again; the retry posts it once more.
    @Test func aLockThatFailsTakesItsNoteBack() async throws {
        try await withServer({ $0.discordBudget = .seconds(1) }) { server in
            let (user, thread, _) = try await server.userWithThread()
            server.emulator.failRequests("PATCH", "/channels/{channel_id}", count: 100_000)
            let refused = try await server.request(.delete, "/v1/me", token: user.token)
            #expect(refused.status.code >= 400)
            #expect(try await server.store.user(UserID(user.userId)!) != nil, "nothing erased")
            let notes = { server.emulator.messages(inThread: thread).filter { $0.content.contains("asked for their data to be deleted") } }
            #expect(notes().isEmpty, "no note says the data is gone")

            server.emulator.failRequests("PATCH", "/channels/{channel_id}", count: 0)
            #expect(try await server.request(.delete, "/v1/me", token: user.token).status == .noContent)
            #expect(notes().count == 1)
            let settled = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(settled.archived && settled.locked)
        }
    }
}
