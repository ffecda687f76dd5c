import DiscordEmulator
import Foundation
import Observation
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskServer

/// What a screen shows of the conversation at one moment: what `StateLog` records each time the
/// model changes.
struct Seen: Sendable, Hashable, CustomStringConvertible {
    struct Line: Sendable, Hashable {
        var id: String
        var text: String
        var author: ConversationMessage.Author
        var delivery: ConversationMessage.Delivery
        var edited: Bool
    }

    var lines: [Line]
    var typing: Bool
    var unread: Int
    var suggestions: [String]
    var connection: String
    var away: Bool?

    @MainActor init(_ conversation: SupportConversation) {
        lines = conversation.messages.map { Line(id: $0.id, text: $0.text, author: $0.author, delivery: $0.delivery, edited: $0.isEdited) }
        typing = conversation.isSupportTyping
        unread = conversation.unreadCount
        suggestions = conversation.suggestions.map(\.id)
        connection = switch conversation.connection {
        case .connecting: "connecting"
        case .live: "live"
        case .polling: "polling"
        case .offline: "offline"
        }
        away = conversation.supportStatus.map { $0.status == .away }
    }

    func line(_ text: String) -> Line? { lines.last { $0.text == text } }

    var description: String {
        "\(connection) typing=\(typing) unread=\(unread) suggestions=\(suggestions) "
            + lines.map { "[\($0.text.prefix(24)) \($0.delivery)\($0.edited ? " edited" : "")]" }.joined(separator: " ")
    }
}

/// Every state of a `SupportConversation` a screen bound to it would render, in order, recorded
/// through `withObservationTracking` (each change re-arms the tracking and records the new state).
@MainActor
final class StateLog {
    let conversation: SupportConversation
    let states = Watched<[Seen]>([])

    init(_ conversation: SupportConversation) {
        self.conversation = conversation
        record()
    }

    private func record() {
        let seen = withObservationTracking {
            Seen(conversation)
        } onChange: { [weak self] in
            // Called as a change begins: the new state is read once it is made.
            Task { @MainActor in self?.record() }
        }
        if states.value.last != seen { states.update { $0.append(seen) } }
    }

    var now: Seen { Seen(conversation) }

    /// Waits until the latest state satisfies `condition`; the timeout only bounds a broken test.
    func wait(_ what: String, until condition: @escaping (Seen) -> Bool) async throws {
        try await states.wait(for: what, timeout: .seconds(90)) { $0.last.map(condition) ?? false }
    }

    /// The successive values of `projection` over every recorded state, repeats folded: what
    /// the screen showed of one thing, in order.
    func history<T: Equatable>(_ projection: (Seen) -> T) -> [T] {
        var values: [T] = []
        for state in states.value {
            let value = projection(state)
            if values.last != value { values.append(value) }
        }
        return values
    }
}

/// The conversation model against the real server, the Discord emulator and a real SQLite file:
/// a whole conversation, asserted as the sequence of states a screen would have shown.
@Suite("SupportConversation against the server", .timeLimit(.minutes(3)))
struct SupportConversationTests {
    static let png = OutgoingFile(filename: "screen.png", contentType: "image/png", data: Data(FileSamples.bytes(of: "image/png")))

    @Test func aWholeConversationAsTheScreenSeesIt() async throws {
        try await withSDKServer(faq: true, {
            $0.desk.commands = true
            $0.outbox.retryBase = .milliseconds(50)
            $0.outbox.retryCap = .milliseconds(200)
        }) { server in
            try await Self.wholeConversation(server)
        }
    }

    @MainActor
    static func wholeConversation(_ server: SDKHarness) async throws {
        let clock = ManualClock()
        let client = server.client()
        let conversation = SupportConversation(client: client, store: InMemoryConversationStore(), clock: clock)
        let log = StateLog(conversation)
        conversation.start()
        try await log.wait("live") { $0.connection == "live" && $0.away == false }
        #expect(log.history(\.connection).first == "connecting")

        // The first message: on the screen at once (on the device), then taken by the server, then in Discord.
        conversation.draft = "Hello, my TV won't connect"
        conversation.send()
        #expect(conversation.draft.isEmpty && conversation.messages.last?.delivery == .pending)
        try await log.wait("the first message sent") { $0.line("Hello, my TV won't connect")?.delivery == .sent }
        let firstDeliveries = log.history { $0.line("Hello, my TV won't connect")?.delivery }.compactMap { $0 }
        #expect(firstDeliveries.first == .pending && firstDeliveries.last == .sent, "\(log.states.value)")
        #expect(Self.isSubsequence(firstDeliveries, of: [.pending, .queued, .sent]))
        let thread = try await server.thread(of: client)

        // Support types, then replies: typing shows, then gives way to the reply, which is unread.
        try server.emulator.typeAsAgent(inThread: thread)
        try await log.wait("support typing") { $0.typing }
        let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Which TV do you have?")
        try await log.wait("the reply, unread") { $0.line("Which TV do you have?") != nil && !$0.typing && $0.unread == 1 }
        // Typing without the reply, then the reply without typing: never both, never typing left on.
        let replyStates = log.history { "typing=\($0.typing) reply=\($0.line("Which TV do you have?") != nil)" }
        #expect(Self.isSubsequence(replyStates, of: ["typing=false reply=false", "typing=true reply=false", "typing=false reply=true"]))
        #expect(conversation.messages.last?.author == .support(name: "Support Agent"))

        // Read marks: the screen showed it; the unread count (the badge) follows.
        conversation.markRead()
        try await log.wait("read") { $0.unread == 0 }
        #expect(conversation.lastReadMessageID == reply.id)

        // Typing that is never followed by a message ends when the server said: on the clock the test drives.
        try server.emulator.typeAsAgent(inThread: thread)
        try await log.wait("support typing again") { $0.typing }
        try await clock.changes.wait(for: "the typing expiry sleeping on the clock", timeout: .seconds(90)) { _ in
            clock.sleepsLeft.contains { $0 > .seconds(2) }
        }
        #expect(conversation.isSupportTyping)
        clock.advance(by: .seconds(30))
        try await log.wait("typing expired") { !$0.typing }

        // A silent reply (/silent): on the screen like any other.
        try await server.settled()
        _ = try server.emulator.runCommand("silent", inChannel: thread, options: [.string("text", "Fixed in 1.4.2")])
        try await log.wait("the silent reply") { $0.line("Fixed in 1.4.2").map { $0.author != .user } ?? false }

        // A suggestion while the user types: asked for once they pause (the clock's 300 ms), sent named with the message.
        let post = try server.emulator.postFAQ(title: "I can't connect my TV", answer: "Add it by hand: Settings › Devices.")
        try await server.settled()
        conversation.draft = "cant conect"
        conversation.draft = "cant conect tv"
        try await clock.changes.wait(for: "the suggestion debounce", timeout: .seconds(90)) { _ in clock.sleepsLeft.contains(.milliseconds(300)) }
        #expect(conversation.suggestions.isEmpty)
        clock.advance(by: .milliseconds(300))
        try await log.wait("the suggestion shown") { $0.suggestions == [post] }
        conversation.draft = "cant conect tv, still"
        conversation.send()
        try await log.wait("sent with the suggestion") { $0.line("cant conect tv, still")?.delivery == .sent && $0.suggestions.isEmpty }
        try await server.settled()
        #expect(server.emulator.messages(inThread: thread).contains { $0.content.contains("<#\(post)>") })

        // An edit and a delete in Discord.
        try server.emulator.editMessage(reply.id, inChannel: thread, content: "Which TV model do you have?")
        try await log.wait("the edit") { $0.lines.contains { $0.id == reply.id && $0.text == "Which TV model do you have?" && $0.edited } }
        let silent = try #require(conversation.messages.last { $0.text == "Fixed in 1.4.2" })
        try server.emulator.deleteMessage(silent.id, inChannel: thread)
        try await log.wait("the delete") { !$0.lines.contains { $0.id == silent.id } }

        // The app goes to the background (the stream stops) and comes back: what came meanwhile, once.
        await conversation.stop()
        let meanwhile = try server.emulator.replyAsAgent(inThread: thread, content: "Are you still there?")
        try await server.settled()
        #expect(!conversation.messages.contains { $0.id == meanwhile.id })
        conversation.start()
        try await log.wait("the reply that came meanwhile") { $0.lines.contains { $0.id == meanwhile.id } && $0.connection == "live" }

        // Discord down: the server keeps the message (queued) until Discord takes it.
        server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1_000, status: 503)
        conversation.draft = "Sent while Discord is down"
        conversation.send()
        try await log.wait("queued") { $0.line("Sent while Discord is down")?.delivery == .queued }
        server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 0)
        try await log.wait("then sent") { $0.line("Sent while Discord is down")?.delivery == .sent }
        #expect(Self.isSubsequence(log.history { $0.line("Sent while Discord is down")?.delivery }.compactMap { $0 }, of: [.pending, .queued, .sent]))

        // A file Discord refuses: failed with why, then retried and sent.
        server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 400)
        conversation.draft = "My screen"
        conversation.draftFiles = [Self.png]
        conversation.send()
        try await log.wait("the file refused") {
            if case .failed = $0.line("My screen")?.delivery { true } else { false }
        }
        let refused = try #require(conversation.messages.last { $0.text == "My screen" })
        #expect(refused.files.map(\.filename) == ["screen.png"] && refused.files.first?.url != nil)
        conversation.retry(refused)
        try await log.wait("the file sent") { $0.line("My screen")?.delivery == .sent }
        let fileDeliveries = log.history { $0.line("My screen")?.delivery }.compactMap { $0 }
        #expect(fileDeliveries.first == .pending && fileDeliveries.last == .sent)
        #expect(fileDeliveries.contains { if case .failed = $0 { true } else { false } })
        let bytes = try await conversation.data(for: try #require(conversation.messages.last { $0.text == "My screen" }?.files.first))
        #expect(bytes == Data(FileSamples.bytes(of: "image/png")))

        // However it got there, each message once and in order; the screen agrees with the server.
        let ids = conversation.messages.map(\.id)
        #expect(Set(ids).count == ids.count)
        #expect(ids == ids.sorted { ConversationTimeline.precedes($0, $1) })
        try await server.settled()
        let server_ = try await client.messages(limit: 100).messages
        #expect(conversation.messages.map(\.id) == server_.map(\.id))
        #expect(conversation.messages.map(\.text) == server_.map(\.content))
        await conversation.stop()
    }

    /// The chat opens offline with its history and its unsent message, and syncs when the
    /// network is back: the message goes out once, and what support wrote meanwhile appears.
    @Test func theChatOpensOfflineWithItsHistoryAndSyncsWhenTheNetworkReturns() async throws {
        try await withSDKServer { server in
            try await Self.offlineAndBack(server)
        }
    }

    @MainActor
    static func offlineAndBack(_ server: SDKHarness) async throws {
        let store = InMemoryConversationStore()
        let clock = ManualClock()
        let device = server.client()
        do {
            let conversation = SupportConversation(client: device, store: store, clock: clock)
            conversation.start()
            let log = StateLog(conversation)
            try await log.wait("live") { $0.connection == "live" }
            conversation.draft = "before the tunnel"
            conversation.send()
            try await log.wait("sent") { $0.line("before the tunnel")?.delivery == .sent }
            await conversation.stop()
        }
        let thread = try await server.thread(of: device)
        let answer = try server.emulator.replyAsAgent(inThread: thread, content: "Got it")
        try await server.settled()

        // The same device, launched again with no network (a server that does not answer).
        let offline = server.client { $0.serverURL = URL(string: "http://127.0.0.1:9")!; $0.sendAttempts = 1 }
        let conversation = SupportConversation(client: offline, store: store, clock: clock)
        let log = StateLog(conversation)
        conversation.start()
        try await log.wait("the history from the device") { $0.line("before the tunnel")?.delivery == .sent }
        conversation.draft = "in the tunnel"
        conversation.send()
        try await log.wait("offline, the message kept on the device") {
            $0.connection == "offline" && $0.line("in the tunnel")?.delivery == .pending
        }
        await conversation.stop()
        #expect(try await offline.pendingMessages().map(\.text) == ["in the tunnel"])

        // Out of the tunnel: the next launch shows the history and the unsent message at once,
        // then sends it and brings what support wrote.
        let online = SupportConversation(client: server.client(), store: store, clock: clock)
        let back = StateLog(online)
        online.start()
        try await back.wait("synced") {
            $0.line("in the tunnel")?.delivery == .sent && $0.lines.contains { $0.id == answer.id }
        }
        let first = try #require(back.states.value.first { !$0.lines.isEmpty })
        #expect(first.line("before the tunnel") != nil && first.line("in the tunnel")?.delivery == .pending)
        try await server.settled()
        #expect(server.emulator.messages(inThread: thread).filter { $0.content == "in the tunnel" }.count == 1)
        #expect(online.messages.map(\.text) == ["before the tunnel", "Got it", "in the tunnel"])
        await online.stop()
    }

    /// A message the server could not take yet (the user's queue full while Discord is down) is
    /// sent again by itself while the stream stays live: on the model's clock, not at the next reconnect.
    @Test func aMessageTheServerCouldNotTakeIsSentAgainWhileLive() async throws {
        try await withSDKServer({
            $0.outbox.maxMessagesPerUser = 1
            $0.outbox.retryBase = .milliseconds(50)
            $0.outbox.retryCap = .milliseconds(200)
        }) { server in
            try await Self.sentAgainWhileLive(server)
        }
    }

    @MainActor
    static func sentAgainWhileLive(_ server: SDKHarness) async throws {
        let clock = ManualClock()
        let conversation = SupportConversation(client: server.client { $0.sendAttempts = 1 }, store: nil, clock: clock)
        let log = StateLog(conversation)
        conversation.start()
        try await log.wait("live") { $0.connection == "live" }
        server.emulator.failRequests("POST", "/channels/{channel_id}/threads", count: 1_000, status: 503)
        conversation.draft = "first"
        conversation.send()
        try await log.wait("first queued") { $0.line("first")?.delivery == .queued }
        conversation.draft = "second"
        conversation.send()
        // The server's queue for this user is full (503, come back in 30 s): kept on the device.
        try await clock.changes.wait(for: "the redelivery sleeping on the clock", timeout: .seconds(90)) { _ in
            clock.sleepsLeft.contains(.seconds(5))
        }
        #expect(conversation.messages.last?.text == "second" && conversation.messages.last?.delivery == .pending)
        server.emulator.failRequests("POST", "/channels/{channel_id}/threads", count: 0)
        try await log.wait("first sent") { $0.line("first")?.delivery == .sent }
        clock.advance(by: .seconds(5))
        try await log.wait("second sent") { $0.line("second")?.delivery == .sent }
        #expect(conversation.messages.map(\.text) == ["first", "second"])
        #expect(conversation.connection == .live)
        await conversation.stop()
    }

    /// After a sign-out, the next user sees nothing of the one before, and nothing of theirs is sent.
    @Test func theNextUserSeesNothingOfTheOneBefore() async throws {
        try await withSDKServer { server in
            try await Self.nextUser(server)
        }
    }

    @MainActor
    static func nextUser(_ server: SDKHarness) async throws {
        let client = server.client()
        let conversation = SupportConversation(client: client, store: InMemoryConversationStore(), clock: ManualClock())
        let log = StateLog(conversation)
        conversation.start()
        try await log.wait("live") { $0.connection == "live" }
        conversation.draft = "mine, sent"
        conversation.send()
        let refused = String(repeating: "too long ", count: 3_000)
        conversation.draft = refused
        conversation.send()
        try await log.wait("one sent, one refused") { state in
            guard case .failed = state.line(refused.trimmingCharacters(in: .whitespaces))?.delivery else { return false }
            return state.line("mine, sent")?.delivery == .sent
        }
        let first = try #require(await client.userID)
        await conversation.stop()
        try await client.signOut()
        conversation.start()
        try await log.wait("the next user, live") { $0.connection == "live" && $0.lines.isEmpty }
        let second = try #require(await client.userID)
        #expect(first != second)
        // Nothing of the first user's: not on screen, not in the outbox, not sent as the second.
        conversation.draft = "hello from the next user"
        conversation.send()
        try await log.wait("the next user's message sent") { $0.line("hello from the next user")?.delivery == .sent }
        #expect(conversation.messages.map(\.text) == ["hello from the next user"])
        #expect(try await client.messages().messages.map(\.content) == ["hello from the next user"])
        await conversation.stop()
    }

    static func isSubsequence<T: Equatable>(_ values: [T], of order: [T]) -> Bool {
        var index = order.startIndex
        for value in values {
            guard let found = order[index...].firstIndex(of: value) else { return false }
            index = found
        }
        return true
    }
}
