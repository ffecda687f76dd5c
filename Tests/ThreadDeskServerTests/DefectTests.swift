import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore

/// Defects of the design before the mirror, each with the test that showed it.
@Suite("Defects that must not come back", .timeLimit(.minutes(2)))
struct DefectTests {
    /// A split send cut short goes on from its first part not posted, and only its own parts:
    /// another send accepted meanwhile waits behind it (the user's order), then goes whole.
    @Test func aSplitSendCutShortGoesOnWithOnlyItsOwnMissingParts() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            _ = try await server.send("hello", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            let long = { (letter: String) in String(repeating: letter, count: 1990) + " " + String(repeating: letter, count: 500) }
            // The first part goes in, then Discord fails: the send stops part-way, kept.
            server.emulator.injectServerErrors(count: 1000, status: 502, after: 1)
            #expect(try await server.accept(long("a"), token: user.token, key: "first").status == .created)
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).count == 2)

            // Another split send in between waits behind it.
            #expect(try await server.accept(long("b"), token: user.token, key: "second").status == .created)
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).count == 2)

            server.emulator.injectServerErrors(count: 0)
            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock)
            let contents = server.emulator.messages(inThread: thread).map { String($0.content.prefix(1)) }
            #expect(contents == ["h", "a", "a", "b", "b"])
            let listed = try await server.messages(token: user.token)
            #expect(listed.count == 5 && listed.allSatisfy { $0["delivery"] == "sent" })
        }
    }

    @Test func aDeletedThreadCostsOneDiscordCallNotOnePerPoll() async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("hello", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            try server.emulator.deleteThread(thread)
            #expect(try await server.messages(token: user.token).isEmpty)
            let reads = MirrorTests.messageReads(server)
            for _ in 0..<20 { #expect(try await server.messages(token: user.token).isEmpty) }
            #expect(MirrorTests.messageReads(server) == reads)
            // The next message starts a new thread.
            #expect(try await server.send("again", token: user.token).status == .created)
            #expect(try await server.thread(of: user.userId) != thread)
        }
    }

    @Test func aCrashBetweenCreatingTheThreadAndStoringItMakesNoSecondThread() async throws {
        try await withServer { server in
            let user = try await server.session()
            // What the crashed attempt left: its note, written before it asked Discord, and the
            // thread in Discord, which the store never heard of.
            // Threads are named for the conversation, so the note says which starter post it made.
            let note = ThreadNotes.attemptNote(at: Date(), starter: ThreadNotes.starterDigest(content: "my first message", fileSizes: []))
            try await server.store.setGlobalValue(ThreadNotes.unrecordedThreadKey(UserID(user.userId)!), to: note)
            // Someone else's post made meanwhile, named alike, is not it.
            let stranger = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID, .init(name: "my first message", message: .init(content: "my first message!")))
            let orphan = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID, .init(name: "my first message", message: .init(content: "my first message")))
            let retry = try await server.send("my first message", token: user.token)
            #expect(retry.status == .created)
            #expect(server.emulator.threads().count == 2)
            #expect(try await server.thread(of: user.userId) == orphan.channel.id)
            #expect(server.emulator.messages(inThread: orphan.channel.id).count == 1)
            #expect(try await server.messages(token: user.token).map { $0["id"] } == [retry.json["id"]])
            // And later messages go into it.
            _ = try await server.send("second", token: user.token)
            #expect(server.emulator.threads().count == 2)
            #expect(server.emulator.messages(inThread: orphan.channel.id).count == 2)
            #expect(server.emulator.messages(inThread: stranger.channel.id).count == 1)
        }
    }

    /// After a crash the user may write something else: the thread the attempt made is still
    /// theirs (told by its starter post), and the new message goes into it.
    @Test func aCrashedAttemptsThreadIsAdoptedByItsStarterNotByWhatIsSentNext() async throws {
        try await withServer { server in
            let user = try await server.session()
            let note = ThreadNotes.attemptNote(at: Date(), starter: ThreadNotes.starterDigest(content: "it crashes on launch", fileSizes: []))
            try await server.store.setGlobalValue(ThreadNotes.unrecordedThreadKey(UserID(user.userId)!), to: note)
            let orphan = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID, .init(name: "it crashes on launch", message: .init(content: "it crashes on launch")))
            #expect(try await server.send("still crashing", token: user.token).status == .created)
            #expect(try await server.thread(of: user.userId) == orphan.channel.id)
            #expect(server.emulator.messages(inThread: orphan.channel.id).map(\.content) == ["it crashes on launch", "still crashing"])
            // Two crashed attempts that began alike ("hi"): a thread mirrored for the one is not
            // the other's, and two that could be are neither's.
            let (first, second, third) = (try await server.session(), try await server.session(), try await server.session())
            let hi = ThreadNotes.attemptNote(at: Date(), starter: ThreadNotes.starterDigest(content: "hi", fileSizes: []))
            for user in [first, second, third] { try await server.store.setGlobalValue(ThreadNotes.unrecordedThreadKey(UserID(user.userId)!), to: hi) }
            let firsts = try await server.discordClient.startForumThread(in: server.discord.forumChannelID, .init(name: "hi", message: .init(content: "hi")))
            try await server.store.saveMirrorThread(
                MirrorThread(id: Snowflake(firsts.channel.id)!, owner: UserID(first.userId)!, complete: true, lastActivity: Date()))
            #expect(try await server.send("hi", token: second.token).status == .created)
            #expect(try await server.thread(of: second.userId) != firsts.channel.id)
            let ambiguous = [
                try await server.discordClient.startForumThread(in: server.discord.forumChannelID, .init(name: "hi", message: .init(content: "hi"))),
                try await server.discordClient.startForumThread(in: server.discord.forumChannelID, .init(name: "hi", message: .init(content: "hi"))),
            ].map(\.channel.id)
            #expect(try await server.send("hi", token: third.token).status == .created)
            let thirdThread = try #require(try await server.thread(of: third.userId))
            #expect(!ambiguous.contains(thirdThread))
            // An attempt noted by an earlier version (no starter) still finds a thread by the user's id.
            let earlier = try await server.session()
            try await server.store.setGlobalValue(ThreadNotes.unrecordedThreadKey(UserID(earlier.userId)!), to: "attempt at \(ISO8601DateFormatter().string(from: Date()))")
            let named = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID, .init(name: earlier.userId, message: .init(content: "from before")))
            #expect(try await server.send("hello", token: earlier.token).status == .created)
            #expect(try await server.thread(of: earlier.userId) == named.channel.id)
        }
    }

    @Test func aThreadIsNamedForTheConversation() async throws {
        try await withServer { server in
            let user = try await server.session(#"{"installation":{"appVersion":"2.1.0","buildVersion":"88"}}"#)
            let long = "My app\ncrashes   when I open the settings screen after updating to the newest version today"
            #expect(try await server.send(long, token: user.token).status == .created)
            let thread = try #require(server.emulator.threads().first)
            #expect(thread.name == "My app crashes when I open the settings screen after updati… · 2.1.0 (88)")
            #expect(!thread.name.contains(user.userId))
            // The user's id is in the thread's first note (and on /user).
            #expect(server.emulator.messages(inThread: thread.id).contains { $0.content.hasPrefix(":ninja:") && $0.content.contains(user.userId) })
            #expect(ThreadService.threadName(firstMessage: .init(content: ""), installation: nil) == "New conversation")
            #expect(ThreadService.threadName(firstMessage: .init(content: "(user wrote) :ninja: hi"), installation: nil) == ":ninja: hi")
            // A crash note that starts a thread names it by what it says.
            #expect(
                ThreadService.threadName(firstMessage: .init(content: ":ninja: 💥 **Crash C3**: EXC_BAD_ACCESS (SIGSEGV)\nline"), installation: nil)
                    == "💥 Crash C3: EXC_BAD_ACCESS (SIGSEGV) line")
        }
    }

    /// The daemon's forwarder: an overflow while a post is in flight must not delete the gap it
    /// queued, nor events that were never sent.
    @Test func anOverflowDuringAPostKeepsTheGapAndTheUnsentEvents() async throws {
        let received = Watched<[[ForumEvent]]>([])
        let (release, releaseFirst) = AsyncStream.makeStream(of: Void.self)
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let router = Router()
        router.post("internal/gateway/events") { request, context -> Response in
            struct Batch: Decodable { var events: [ForumEvent] }
            let batch = try await request.decode(as: Batch.self, context: context)
            let count = received.update {
                $0.append(batch.events)
                return $0.count
            }
            arrived.yield()
            if count == 1 { for await _ in release { break } }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            var configuration = HTTPEventForwarder.Configuration(serverURL: "http://127.0.0.1:\(try #require(client.port))", secret: "s")
            configuration.maxQueued = 5
            let forwarder = HTTPEventForwarder(configuration: configuration, logger: testLogger())
            let running = Task { try await forwarder.run() }
            defer { running.cancel() }
            let event = { (index: Int) in ForumEvent.messageDeleted(channelID: "1", messageID: String(index)) }
            await forwarder.deliver((1...3).map(event))
            // Generous, for a busy machine: a forwarder that never posts never does.
            #expect(await yields(arrivals, within: .seconds(120)), "the first post never came")
            // The server holds the first post while six more events overflow the queue.
            await forwarder.deliver((4...9).map(event))
            releaseFirst.yield()
            try await received.wait(for: "a second post") { $0.count >= 2 }
            try await eventually("the queue empty") { forwarder.queued == 0 }
            let later = Array(received.value.dropFirst()).flatMap { $0 }
            #expect(later.first == .gap)
            #expect(Array(later.dropFirst()) == (6...9).map(event))
        }
    }
}
