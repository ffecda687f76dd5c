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
        try await withServer { server in
            let user = try await server.session()
            server.emulator.loseAnswers("POST", "/channels/{channel_id}/threads")
            let lost = try await server.send("please forget me", token: user.token, key: "first")
            #expect(lost.status == .serviceUnavailable)
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
            try await eventually("the thread's status noted") { try await server.store.globalValue(StatusTags.key(Snowflake(thread)!)) != nil }
            #expect(try await server.request(.delete, "/v1/me", token: user.token).status == .noContent)
            let settled = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(settled.archived && settled.locked)

            let other = StatusTags(
                names: StatusTagNames(), discord: server.discordClient, store: server.store, feed: nil,
                forumChannelID: server.discord.forumChannelID, logger: testLogger(), time: .system)
            let touches = { server.emulator.recordedRequests.filter { $0.path.hasSuffix("/channels/\(thread)") && $0.method != "GET" }.count }
            let before = touches()
            other.conversation(in: Snowflake(thread)!, isNow: .needsReply)
            #expect(await other.round(), "the round ends with nothing left to do")
            #expect(touches() == before)
            let after = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(after.archived && after.locked)
        }
    }
}
