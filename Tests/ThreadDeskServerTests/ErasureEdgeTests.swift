import Deadlines
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

    /// An erasure waits for another replica's status change of the thread (its lock) on the
    /// server's clock: it looks again each `otherReplicaLook` of the clock, no sooner, goes on
    /// once the lock is free, and gives up (`Busy`) when the lock stays held past its wait.
    @Test func anErasureWaitsForAnotherReplicasStatusChangeOnTheServersClock() async throws {
        try await withServer { server in
            let store = server.store
            let clock = ManualClock()
            let time = ServerTime.driven(by: clock)
            let look = StatusTags.otherReplicaLook
            let (thread, stuck) = (try #require(Snowflake("1100000000000000001")), try #require(Snowflake("1100000000000000002")))
            let (held, release) = (Watched(0), Watched(false))
            // Another replica changing each thread's status: it holds the lock until the test lets
            // go of the first; the second it never lets go.
            let first = Task {
                try await store.exclusively(StatusTags.key(thread)) {
                    held.update { $0 += 1 }
                    try await release.wait(for: "the test to let the lock go") { $0 }
                }
            }
            let never = Task {
                try await store.exclusively(StatusTags.key(stuck)) {
                    held.update { $0 += 1 }
                    try await Watched(false).wait(for: "the end of the test", timeout: .seconds(3600)) { $0 }
                }
            }
            defer { never.cancel() }
            try await held.wait(for: "the other replica's locks") { $0 == 2 }

            async let erased: Void = withTimeout(.seconds(120), "the erasure") {
                try await StatusTags.markErased(thread, in: store, time: time)
            }
            let nextLook = { try await clock.changes.wait(for: "the erasure's next look, on the clock") { _ in clock.sleepsLeft == [look] } }
            try await nextLook()
            for _ in 0..<3 {
                clock.advance(by: look)
                try await nextLook()
            }
            #expect(try await store.globalValue(StatusTags.key(thread)) == nil, "not marked while the lock is held")
            release.update { $0 = true }
            try await first.value
            // Let go in another replica: nothing here hears of it, the next look finds it.
            clock.advance(by: look)
            try await erased
            #expect(try await store.globalValue(StatusTags.key(thread)) == StatusTags.erasedNote)

            // Held past the wait (a minute of the clock, passed at once): the erasure gives up.
            await #expect(throws: StatusTags.Busy.self) {
                try await clock.drive { try await StatusTags.markErased(stuck, in: store, time: time) }
            }
            #expect(try await store.globalValue(StatusTags.key(stuck)) == nil)
        }
    }

    /// A status change under way in this process (its PATCH held in Discord) holds the erasure
    /// back; once it is written, the erasure goes on at once: woken by the change letting the
    /// thread's lock go, while the clock it waits on never moves.
    @Test func anErasureGoesOnOnceAStatusChangeHereLetsTheThreadGo() async throws {
        try await withServer(gateway: true, { $0.statusTags = StatusTagNames() }) { server in
            let (_, thread, _) = try await server.userWithThread()
            try await server.settled()
            let threadID = try #require(Snowflake(thread))
            let patches = { server.emulator.counters.requests("PATCH", "/channels/{channel_id}") }
            let before = patches()
            server.emulator.holdRequests("PATCH", "/channels/{channel_id}")
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Which version?")
            try await server.emulator.waitUntil("the status change under way, its PATCH held") { _ in patches() > before }

            let clock = ManualClock()
            async let erased: Void = withTimeout(.seconds(120), "the erasure, the clock never moving") {
                try await StatusTags.markErased(threadID, in: server.store, time: .driven(by: clock))
            }
            try await clock.waitForSleepers(1)
            #expect(try await server.store.globalValue(StatusTags.key(threadID)) != StatusTags.erasedNote)
            server.emulator.releaseHeldRequests()
            try await erased
            #expect(clock.now.offset == .zero)
            #expect(try await server.store.globalValue(StatusTags.key(threadID)) == StatusTags.erasedNote)
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
