import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Threads that go away")
struct ThreadRecoveryTests {
    @Test func aDeletedThreadIsRecreatedOnTheNextMessage() async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("first", token: user.token)
            let old = try #require(try await server.thread(of: user.userId))
            try server.emulator.deleteThread(old)
            #expect(try await server.messages(token: user.token).isEmpty)

            let reply = try await server.send("are you there?", token: user.token)
            #expect(reply.status == .created)
            let new = try #require(try await server.thread(of: user.userId))
            #expect(new != old)
            #expect(server.emulator.messages(inThread: new).map(\.content) == ["are you there?"])
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == ["are you there?"])
            // And it stays usable.
            #expect(try await server.send("still here", token: user.token).status == .created)
            #expect(server.emulator.threads().count == 1)
        }
    }

    /// Discord made the thread, but its answer was lost on the way (a 504 from its edge): the
    /// message waits in the outbox, and its next attempt finds the thread in Discord instead of
    /// making a second one, and does not post the first message twice. The server's clock is
    /// the test's: the next attempt comes when the test moves it.
    @Test func aThreadWhoseCreationAnswerWasLostIsFoundOnTheNextAttempt() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1); $0.outbox.retryBase = .seconds(30) }) { server in
            let user = try await server.session()
            server.emulator.loseAnswers("POST", "/channels/{channel_id}/threads")
            let lost = try await server.accept("my first message", token: user.token, key: "first")
            #expect(lost.status == .created)
            try await server.settled(driving: clock)
            #expect(server.emulator.threads().count == 1)
            #expect(try await server.thread(of: user.userId) == nil)
            let note = ThreadNotes.unrecordedThreadKey(UserID(user.userId)!)
            #expect(try await server.store.globalValue(note) != nil)
            #expect(try await server.messages(token: user.token).first?["delivery"] == "queued")

            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock)
            #expect(server.emulator.counters.requests("POST", "/channels/{channel_id}/threads") == 1)
            #expect(server.emulator.counters.requests("GET", "/guilds/{guild_id}/threads/active") == 1)
            #expect(try await server.store.globalValue(note) == nil)
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.threads().map(\.id) == [thread])
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["my first message"])
            let listed = try await server.messages(token: user.token)
            #expect(listed.map { $0["content"]?.stringValue } == ["my first message"])
            #expect(listed.first?["id"] == lost.json["id"] && listed.first?["delivery"] == "sent")
            #expect(try await server.send("second", token: user.token).status == .created)
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["my first message", "second"])
        }
    }

    @Test(arguments: [true, false])
    func aLockedThreadContinuesInANewOneThatPointsBack(archived: Bool) async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("first", token: user.token)
            let old = try #require(try await server.thread(of: user.userId))
            if archived { try server.emulator.archiveThread(old, locked: true) } else { try server.emulator.lockThread(old) }

            #expect(try await server.send("after the lock", token: user.token).status == .created)
            let new = try #require(try await server.thread(of: user.userId))
            #expect(new != old)
            let posted = server.emulator.messages(inThread: new).map(\.content)
            #expect(posted.first == "after the lock")
            #expect(posted.contains { $0.hasPrefix(":ninja:") && $0.contains("<#\(old)>") })
            #expect(server.emulator.messages(inThread: old).map(\.content) == ["first"])
        }
    }

    @Test func anArchivedThreadIsReusedNotReplaced() async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("first", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            try server.emulator.archiveThread(thread)
            #expect(try await server.send("second", token: user.token).status == .created)
            #expect(try await server.thread(of: user.userId) == thread)
            #expect(server.emulator.threads().first { $0.id == thread }?.archived == false)
        }
    }

    @Test func aForumThatRequiresATagGetsTheDefaultTag() async throws {
        try await withServer { server in
            server.emulator.setForumRequiresTag(true)
            let user = try await server.session()
            #expect(try await server.send("tag me", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let tag = try #require(server.emulator.forumTagIDs.first)
            #expect(server.emulator.threads().first { $0.id == thread }?.appliedTags == [tag])
        }
    }

    @Test func aConfiguredDefaultTagWins() async throws {
        try await withServer(defaultTagIndex: 1) { server in
            server.emulator.setForumRequiresTag(true)
            let user = try await server.session()
            #expect(try await server.send("tag me", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.threads().first { $0.id == thread }?.appliedTags == [server.configuration.defaultTagID!])
            #expect(server.configuration.defaultTagID == server.emulator.forumTagIDs[1])
        }
    }
}

@Suite("A full forum")
struct FullForumTests {
    @Test func aFullForumArchivesTheIdlestThreadAndTheNewUserGetsIn() async throws {
        var discord = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
        discord.maxActiveThreads = 3
        try await withServer(emulator: discord) { server in
            var users: [Harness.Session] = []
            for index in 0..<3 {
                let user = try await server.session()
                #expect(try await server.send("user \(index)", token: user.token).status == .created)
                users.append(user)
            }
            let oldest = try #require(try await server.thread(of: users[0].userId))
            // The fourth thread does not fit: the idlest of ours are archived and it goes in.
            let newcomer = try await server.session()
            #expect(try await server.send("let me in", token: newcomer.token).status == .created)
            #expect(try await server.thread(of: newcomer.userId) != nil)
            #expect(server.emulator.threads().first { $0.id == oldest }?.archived == true)
            #expect(try await server.metric("threaddesk_threads_archived_total") >= 1)
            // An archived user writes again in the same thread, which comes back.
            #expect(try await server.send("still there?", token: users[0].token).status == .created)
            #expect(try await server.thread(of: users[0].userId) == oldest)
            #expect(server.emulator.threads().first { $0.id == oldest }?.archived == false)
        }
    }
}
