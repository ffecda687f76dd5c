import APNsEmulator
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

/// The agent's desk: silent replies (`:cold:`, `🥶`) reach the app without an alert.
@Suite("Silent replies", .timeLimit(.minutes(2)))
struct SilentReplyTests {
    @Test func aColdReplyIsListedAndStreamedButAlertsNobody() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, device) = try await server.userWithThread()
            let cold = try server.emulator.replyAsAgent(inThread: thread, content: ":cold: fixed quietly in 1.4.2")
            let frozen = try server.emulator.replyAsAgent(inThread: thread, content: "  🥶 no need to update today")
            // A reply that does alert, after both: once it is pushed, the silent ones were decided.
            let loud = try server.emulator.replyAsAgent(inThread: thread, content: "please update now")
            try await eventually("the loud reply's push") { !server.apns.deliveries(to: device).isEmpty }
            #expect(server.apns.deliveries(to: device).map(PushTests.messageID) == [loud.id])
            let shown = try await server.messages(token: user.token).filter { $0["author"]?.stringValue == "support" }
            #expect(shown.map { $0["id"]?.stringValue } == [cold.id, frozen.id, loud.id])
            #expect(shown.map { $0["content"]?.stringValue } == ["fixed quietly in 1.4.2", "no need to update today", "please update now"])
            // They count as unread like any reply.
            let unread = try await server.request(.get, "/v1/unread", token: user.token)
            #expect(unread.json["count"]?.intValue == 3)
        }
    }

    @Test func withBackgroundPushesOnASilentReplyGetsOneInTheBackgroundOnly() async throws {
        try await withServer(gateway: true, { $0.push.background = true }) { server in
            let (_, thread, device) = try await server.userWithThread()
            let cold = try server.emulator.replyAsAgent(inThread: thread, content: ":cold: quiet")
            try await eventually("the background push") { !server.apns.deliveries(to: device).isEmpty }
            let deliveries = server.apns.deliveries(to: device)
            #expect(deliveries.map(PushTests.messageID) == [cold.id])
            #expect(deliveries.allSatisfy { $0.pushType == "background" })
        }
    }

    @Test func markersAreReadAfterBlanksAndOnlyAtTheStart() {
        #expect(NoteMarkers.isSilent(":cold: hi") && NoteMarkers.isSilent("\u{200B} 🥶hi"))
        #expect(!NoteMarkers.isSilent("it is :cold: here") && !NoteMarkers.isSilent(":ninja: note"))
        #expect(NoteMarkers.shownReply("  :cold:   fixed") == "fixed")
        #expect(NoteMarkers.shownReply("fine :cold:") == "fine :cold:")
    }
}
