import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
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
            try await server.settled()
            try #require(try await Self.forumTags(server).count == 5, "the forum's status tags")
            let tags = try await Self.forumTags(server)
            let (needsReply, waiting) = (try #require(tags["needs reply"]), try #require(tags["waiting on user"]))
            #expect(tags["open"] != nil && tags["ios"] != nil && tags["resolved"] != nil)

            let user = try await server.session()
            #expect(try await server.send("my app crashes", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply after the user's message")

            // An agent tags the thread by hand and answers: the status moves, the agent's tag stays.
            let ios = try #require(tags["ios"])
            _ = try await server.discordClient.modifyThread(thread, appliedTags: [needsReply, ios])
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Which version?")
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [waiting, ios], "waiting on user after the reply")

            // A note is no turn of the conversation.
            try server.emulator.postNote(inThread: thread, content: "probably the new build")
            #expect(try await server.send("2.1.0", token: user.token).status == .created)
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply, ios], "needs reply again")
        }
    }

    /// While the gateway feed is live, a change of status is one PATCH: what the thread shows is
    /// noted with each change, and the THREAD_UPDATE that echoes it agrees. An agent's own change
    /// (heard through the gateway) or a gap in the feed has the next change read the thread first,
    /// once.
    @Test func withTheFeedLiveAChangeIsOnePatchAndNoRead() async throws {
        try await withServer(gateway: true, { $0.statusTags = StatusTagNames() }) { server in
            try await server.settled()
            try #require(try await Self.forumTags(server).count == 5, "the forum's status tags")
            let tags = try await Self.forumTags(server)
            let (needsReply, waiting, ios, open) = (
                try #require(tags["needs reply"]), try #require(tags["waiting on user"]), try #require(tags["ios"]), try #require(tags["open"])
            )
            try await server.settled()
            try #require(try await server.store.globalValue(FeedState.heardKey) != nil, "the gateway feed heard")
            let user = try await server.session()
            #expect(try await server.send("my app crashes", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let threadID = try #require(Snowflake(thread))
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply")
            let reads = {
                server.emulator.recordedRequests.filter { $0.method == "GET" && $0.route == "/channels/{channel_id}" && $0.path.hasSuffix("/channels/\(thread)") }.count
            }
            let patches = { server.emulator.recordedRequests.filter { $0.method == "PATCH" && $0.route == "/channels/{channel_id}" }.count }
            let note = { try await server.store.globalValue(StatusTags.key(threadID)).flatMap(StatusTags.ShownNote.init(note:)) }
            try await server.settled()
            try #require(try await note()?.shows?.tags == [needsReply], "the note says what the thread shows")
            try await server.settled()
            try #require(patches() == 2, "the forum's and the thread's PATCH logged")
            let (readsBefore, patchesBefore) = (reads(), patches())
            #expect(readsBefore == 0, "the new thread's first status read nothing: Discord's answer said what it shows")

            // The agent answers and the user writes back: one PATCH each, no read.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Which version?")
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [waiting], "waiting on user")
            #expect(try await server.send("2.1.0", token: user.token).status == .created)
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply again")
            // (The emulator logs a request just after answering it: its count may trail the tags.)
            try await server.settled()
            try #require(patches() == patchesBefore + 2, "two PATCHes")
            #expect(reads() == readsBefore, "no read of the thread while the feed is live")

            // An agent tags the thread by hand: once that is heard, the next change reads the
            // thread first and keeps the tag; the one after needs no read again.
            _ = try await server.discordClient.modifyThread(thread, appliedTags: [needsReply, ios])
            try await server.settled()
            try #require(try await note()?.shows == nil, "the agent's change heard")
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Fixed in 2.1.1")
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [waiting, ios], "waiting on user, the agent's tag kept")
            try await server.settled()
            try #require(reads() == readsBefore + 1, "one read after the agent's change")
            #expect(try await server.send("still broken", token: user.token).status == .created)
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply, ios], "needs reply, the agent's tag kept")
            #expect(reads() == readsBefore + 1)

            // A gap in the feed (a new gateway session: what was said meanwhile may be lost): the
            // next change reads the thread first.
            let epoch = try await server.store.globalValue(FeedState.epochKey).flatMap { Int($0) } ?? 0
            let sessions = server.work.gatewaySessions
            server.emulator.sendInvalidSession(resumable: false)
            try await server.newGatewaySession(since: sessions)
            try #require((try await server.store.globalValue(FeedState.epochKey).flatMap { Int($0) } ?? 0) > epoch, "the feed's gap recorded")
            _ = try await server.discordClient.modifyThread(thread, appliedTags: [needsReply, ios, open])
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Try 2.1.2")
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [waiting, ios, open], "waiting on user after the gap")
            try await server.settled()
            try #require(reads() == readsBefore + 2, "one read after the gap")
        }
    }

    /// An agent who sets a status tag by hand: the server no longer takes its own status as shown,
    /// so the next change is made, not skipped.
    /// Also with a note as an earlier version wrote it (the status alone, nothing of the tags).
    @Test(arguments: [false, true])
    func aStatusTagSetByHandIsWhatTheThreadShows(noteOfAnEarlierVersion: Bool) async throws {
        try await withServer(gateway: true, { $0.statusTags = StatusTagNames() }) { server in
            try await server.settled()
            try #require(try await Self.forumTags(server).count == 5, "the forum's status tags")
            let tags = try await Self.forumTags(server)
            let (needsReply, resolved) = (try #require(tags["needs reply"]), try #require(tags["resolved"]))
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply")
            let key = StatusTags.key(try #require(Snowflake(thread)))
            try await server.settled()
            try #require(try await server.store.globalValue(key) != nil, "the note written")
            if noteOfAnEarlierVersion { try await server.store.setGlobalValue(key, to: "needs-reply") }
            // The agent marks it resolved by hand; the user writes again: it needs a reply again.
            _ = try await server.discordClient.modifyThread(thread, appliedTags: [resolved])
            // Heard, the note no longer claims any status as shown: the next change is made.
            try await server.settled()
            let note = try await server.store.globalValue(StatusTags.key(Snowflake(thread)!)).flatMap(StatusTags.ShownNote.init(note:))
            try #require(note?.unsure == true && note?.shows == nil, "the hand-set tag heard")
            #expect(try await server.send("still broken", token: user.token).status == .created)
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply again")
        }
    }

    @Test func theNoteOfWhatAThreadShowsReadsBack() throws {
        let note = StatusTags.ShownNote(status: .waitingOnUser, epoch: 3, shows: (["111", "222"], true))
        #expect(note.note == "waiting-on-user;3;1;111,222")
        #expect(StatusTags.ShownNote(note: note.note) == note)
        // Notes of earlier versions say only the status.
        #expect(StatusTags.ShownNote(note: "needs-reply") == .init(status: .needsReply, epoch: nil, shows: nil))
        #expect(StatusTags.ShownNote(note: ";4;0;") == .init(status: nil, epoch: 4, shows: ([], false)))
        // Unsure: the status last given, no longer taken as shown.
        #expect(StatusTags.ShownNote(note: "~resolved") == .init(status: .resolved, unsure: true, epoch: nil, shows: nil))
        #expect(StatusTags.ShownNote(note: "~waiting-on-user;2;0;9") == .init(status: .waitingOnUser, unsure: true, epoch: 2, shows: (["9"], false)))
        // Anything else is no note: the thread is read from Discord.
        for bad in ["needs", "needs-reply;3", "needs-reply;x;1;1", "resolved;3;2;1", "resolved;3;1;abc", "a;b;c;d;e"] {
            let parsed = StatusTags.ShownNote(note: bad)
            #expect(parsed == nil || parsed?.shows == nil, "\(bad)")
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
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [needsReply], "needs reply")
            let patches = { server.emulator.recordedRequests.filter { $0.method == "PATCH" && $0.route == "/channels/{channel_id}" }.count }
            try await server.settled()
            try #require(patches() == 2, "one PATCH for the forum's tags, one for the thread")
            let before = patches()
            #expect(try await server.send("second", token: user.token).status == .created)
            #expect(try await server.send("third", token: user.token).status == .created)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Looking into it")
            try await server.settled()
            try #require(Self.appliedTags(server, thread) == [waiting], "waiting on user")
            // (The emulator logs a request just after answering it: its count may trail the tags.)
            try await server.settled()
            try #require(patches() == before + 1, "one PATCH: the two messages while it needed a reply changed nothing")
            // A second start (another replica, a restart) finds the tags and adds none.
            let again = StatusTags(
                names: StatusTagNames(), discord: server.discordClient, store: server.store, feed: nil,
                catalog: server.configuration.catalog, logger: testLogger(), time: .system)
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
            try await server.settled()
            try #require(!server.apns.deliveries(to: device).isEmpty, "the loud reply's push")
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
            try await server.settled()
            try #require(!server.apns.deliveries(to: device).isEmpty, "the background push")
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
