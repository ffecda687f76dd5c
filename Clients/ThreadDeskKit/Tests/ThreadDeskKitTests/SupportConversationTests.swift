import Foundation
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
