import Foundation
import Observation
import Testing
@testable import ThreadDeskKit

/// The model's handling of events on its own (no server: the client points at a closed port, so
/// every send ends kept on the device).
@Suite("SupportConversation's events")
@MainActor
struct SupportConversationEventTests {
    static func conversation() -> SupportConversation {
        var configuration = ThreadDeskConfiguration(
            serverURL: URL(string: "http://127.0.0.1:9")!, appKey: "key", sessionStore: InMemorySessionStore(),
            outbox: FileOutbox(directory: FileManager.default.temporaryDirectory.appendingPathComponent("td-\(UUID().uuidString)")))
        configuration.sendAttempts = 1
        configuration.requestTimeout = 2
        return SupportConversation(client: ThreadDeskClient(configuration), store: nil, options: .init(), clock: ContinuousClock())
    }

    static func created(_ id: String, _ text: String, author: MessageAuthor = .user, delivery: MessageDelivery = .sent) -> LiveUpdate {
        LiveUpdate(
            event: .messageCreated(SupportMessage(id: id, author: author, content: text, createdAt: "2026-11-28T10:00:00Z", delivery: delivery)),
            position: "p\(id)")
    }

    @Test func theUsersOwnMessageFromTheStreamTakesThePendingCopysPlaceOnceAndAReplayTakesNothing() async {
        let conversation = Self.conversation()
        conversation.draft = "ok"
        conversation.send()
        conversation.draft = "ok"
        conversation.send()
        #expect(conversation.messages.map(\.delivery) == [.pending, .pending])
        conversation.apply(Self.created("100", "ok"))
        #expect(conversation.messages.map(\.id).first == "100" && conversation.messages.count == 2)
        // The same event again (a replay after a reconnect): the other "ok" stays.
        conversation.apply(Self.created("100", "ok"))
        #expect(conversation.messages.count == 2 && conversation.messages.last?.delivery == .pending)
        // Support's words never stand for the user's.
        conversation.apply(Self.created("101", "ok", author: .support))
        #expect(conversation.messages.filter { $0.delivery == .pending }.count == 1)
        await conversation.stop()
    }

    @Test func aSentMessageIsNotTakenBackToQueuedByAnOlderAnswer() async {
        let conversation = Self.conversation()
        conversation.apply(Self.created("200", "hello", delivery: .queued))
        conversation.apply(LiveUpdate(
            event: .messageUpdated(SupportMessage(id: "200", author: .user, content: "hello", createdAt: "2026-11-28T10:00:00Z", delivery: .sent)),
            position: "p2"))
        // The stream replays the creation (queued): what support has stays sent.
        conversation.apply(Self.created("200", "hello", delivery: .queued))
        #expect(conversation.messages.map(\.delivery) == [.sent])
        await conversation.stop()
    }

    @Test func typingHoldsUntilTheServersMomentOrSupportsMessage() async {
        let conversation = Self.conversation()
        conversation.apply(LiveUpdate(event: .typing(until: Date().addingTimeInterval(60)), position: "p1"))
        #expect(conversation.isSupportTyping)
        conversation.apply(Self.created("300", "Hi", author: .support))
        #expect(!conversation.isSupportTyping)
        conversation.apply(LiveUpdate(event: .typing(until: Date().addingTimeInterval(-1)), position: "p2"))
        #expect(!conversation.isSupportTyping)
        await conversation.stop()
        #expect(conversation.connection == .offline(retryAt: nil))
    }

    @Test func aScreenTrackingTheModelIsToldOfEachPartsChanges() async {
        let conversation = Self.conversation()
        func changes(_ read: @escaping @MainActor () -> Void, after change: () -> Void) -> Bool {
            let told = Flag()
            withObservationTracking { read() } onChange: { told.set() }
            change()
            return told.isSet
        }
        #expect(changes({ _ = conversation.isSupportTyping }) {
            conversation.apply(LiveUpdate(event: .typing(until: Date().addingTimeInterval(60)), position: "p1"))
        })
        #expect(changes({ _ = conversation.messages }) { conversation.apply(Self.created("400", "Hi", author: .support)) })
        #expect(changes({ _ = conversation.unreadCount }) { conversation.apply(LiveUpdate(event: .unread(count: 3), position: "p2")) })
        #expect(changes({ _ = conversation.lastReadMessageID }) { conversation.apply(LiveUpdate(event: .read(messageId: "400"), position: "p3")) })
        #expect(changes({ _ = conversation.connection }) {
            conversation.apply(LiveUpdate(event: .connection(.polling), position: nil))
        })
        #expect(changes({ _ = conversation.draft }) { conversation.draft = "hello" })
        #expect(changes({ _ = conversation.timeline }) { conversation.apply(LiveUpdate(event: .messageDeleted(id: "400"), position: "p4")) })
        #expect(conversation.connection == .polling && conversation.unreadCount == 3 && conversation.lastReadMessageID == "400")
        await conversation.stop()
    }

    @Test func withoutANetworkTheSessionIsOpenedAgainLaterAndTheScreenSaysWhy() async throws {
        var options = SupportConversation.Options()
        options.reopenDelay = .seconds(60)
        let conversation = SupportConversation(client: Self.conversation().client, store: nil, options: options, clock: ContinuousClock())
        let running = Task { await conversation.run() }
        try await Self.until {
            if case .offline(retryAt: .some) = conversation.connection { conversation.lastError?.kind == .transport } else { false }
        }
        running.cancel()
        await running.value
        await conversation.stop()
        #expect(conversation.connection == .offline(retryAt: nil))
    }

    @Test func theDeviceKeepsTheConversationAndTheNextRunShowsItOffline() async throws {
        let store = InMemoryConversationStore()
        let client = Self.conversation().client
        try await client.configuration.sessionStore.save(Session(userId: "app/u1", token: "t"))
        let first = SupportConversation(client: client, store: store, options: .init(), clock: ContinuousClock())
        let running = Task { await first.run() }
        // The kept session opens without the network; its stream then waits to reconnect.
        try await Self.until { if case .offline(retryAt: .some) = first.connection { true } else { false } }
        first.apply(Self.created("500", "kept", author: .support))
        first.apply(LiveUpdate(event: .unread(count: 1), position: "p500"))
        running.cancel()
        await running.value
        await first.stop()
        let kept = try #require(await store.load())
        #expect(kept.userID == "app/u1" && kept.messages.map(\.id) == ["500"] && kept.unreadCount == 1 && kept.lastEventID == "p500")

        let second = SupportConversation(client: client, store: store, options: .init(), clock: ContinuousClock())
        let again = Task { await second.run() }
        try await Self.until { second.messages.map(\.id) == ["500"] && second.unreadCount == 1 }
        again.cancel()
        await again.value
        await second.stop()
    }

    /// Waits (10 s at most) for `condition`, checked as the main actor runs.
    static func until(_ condition: @MainActor () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition did not hold within 10 s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func theTokenGoesToTheServersAttachmentsOnly() {
        let server = URL(string: "https://support.example.com/td")!
        let good = ["https://support.example.com/td/v1/attachments/123", "https://SUPPORT.example.com:443/td/v1/attachments/9?x=1"]
        for url in good { #expect(ThreadDeskClient.isAttachmentURL(URL(string: url)!, of: server), "\(url)") }
        let bad = [
            "https://evil.example.com/td/v1/attachments/1", "http://support.example.com/td/v1/attachments/1",
            "https://support.example.com:8443/td/v1/attachments/1", "https://u:p@support.example.com/td/v1/attachments/1",
            "https://support.example.com/td/v1/attachments/1#x", "https://support.example.com/td/v1/attachments/../../admin",
            "https://support.example.com/td/v1/attachments/%2e%2e/x", "https://support.example.com/td/v1/attachments%2F..%2Fadmin",
            "https://support.example.com/admin/v1/attachments/1", "https://support.example.com/td/v1/attachments/",
            "https://support.example.com/td/v1/messages",
        ]
        for url in bad { #expect(!ThreadDeskClient.isAttachmentURL(URL(string: url)!, of: server), "\(url)") }
    }
}

/// Set once by an observation's change handler (which may run on any thread).
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
