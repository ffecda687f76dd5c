import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer

/// The agent's desk, first part: the forum's status tags follow the conversation by themselves.
@Suite("Status tags", .timeLimit(.minutes(2)))
struct StatusTagTests {
    /// The forum's tags by name, as Discord has them.
    static func forumTags(_ server: Harness) async throws -> [String: String] {
        let forum = try await server.discordClient.channel(server.discord.forumChannelID)
        return Dictionary(uniqueKeysWithValues: (forum.availableTags ?? []).map { ($0.name, $0.id) })
    }

    static func appliedTags(_ server: Harness, _ thread: String) -> Set<String> {
        Set(server.emulator.threads().first { $0.id == thread }?.appliedTags ?? [])
    }

    @Test func statusFollowsTheConversationAndKeepsTheAgentsTags() async throws {
        try await withServer(gateway: true, { $0.statusTags = StatusTagNames() }) { server in
            // At start the forum gets the three tags, beside the ones it had.
            try await eventually("the forum's status tags") { try await Self.forumTags(server).count == 5 }
            let tags = try await Self.forumTags(server)
            let (needsReply, waiting) = (try #require(tags["needs reply"]), try #require(tags["waiting on user"]))
            #expect(tags["open"] != nil && tags["ios"] != nil && tags["resolved"] != nil)

            let user = try await server.session()
            #expect(try await server.send("my app crashes", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            try await eventually("needs reply after the user's message") { Self.appliedTags(server, thread) == [needsReply] }

            // An agent tags the thread by hand and answers: the status moves, the agent's tag stays.
            let ios = try #require(tags["ios"])
            _ = try await server.discordClient.modifyThread(thread, appliedTags: [needsReply, ios])
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Which version?")
            try await eventually("waiting on user after the reply") { Self.appliedTags(server, thread) == [waiting, ios] }

            // A note is no turn of the conversation.
            try server.emulator.postNote(inThread: thread, content: "probably the new build")
            #expect(try await server.send("2.1.0", token: user.token).status == .created)
            try await eventually("needs reply again") { Self.appliedTags(server, thread) == [needsReply, ios] }
        }
    }

    /// One PATCH of the thread per change of status: none for more messages while the status is
    /// already `needs reply`; the forum's tags are added once, not again by a second start.
    @Test func anUnchangedStatusCostsNoCallAndTheForumIsSetUpOnce() async throws {
        try await withServer(gateway: true, { $0.statusTags = StatusTagNames() }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let tags = try await Self.forumTags(server)
            let (needsReply, waiting) = (try #require(tags["needs reply"]), try #require(tags["waiting on user"]))
            try await eventually("needs reply") { Self.appliedTags(server, thread) == [needsReply] }
            let patches = { server.emulator.recordedRequests.filter { $0.method == "PATCH" && $0.route == "/channels/{channel_id}" }.count }
            let before = patches()
            #expect(before == 2, "one for the forum's tags, one for the thread")
            #expect(try await server.send("second", token: user.token).status == .created)
            #expect(try await server.send("third", token: user.token).status == .created)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Looking into it")
            try await eventually("waiting on user") { Self.appliedTags(server, thread) == [waiting] }
            #expect(patches() == before + 1, "the two messages while it needed a reply changed nothing")
            // A second start (another replica, a restart) finds the tags and adds none.
            let again = StatusTags(
                names: StatusTagNames(), discord: server.discordClient, store: server.store,
                forumChannelID: server.discord.forumChannelID, logger: testLogger(), time: .system)
            #expect(try await again.tagIDs()[.needsReply] == needsReply)
            #expect(try await Self.forumTags(server).count == 5)
            #expect(patches() == before + 1)
        }
    }

    @Test func theNamesAreConfigurable() throws {
        var environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k"]
        environment["STATUS_TAGS"] = "open question, asked back, done"
        let names = try #require(try ServerConfiguration(environment: environment).statusTags)
        #expect([names.needsReply, names.waitingOnUser, names.resolved] == ["open question", "asked back", "done"])
        environment["STATUS_TAGS"] = "off"
        #expect(try ServerConfiguration(environment: environment).statusTags == nil)
        environment["STATUS_TAGS"] = "one, one, two"
        #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: environment) }
    }
}
