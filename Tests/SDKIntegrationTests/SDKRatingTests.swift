import DiscordEmulator
import Foundation
import Observation
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskServer

/// A rating from the SDK's conversation model through the server: asked when support closes the
/// conversation, shown by the model, given once, and in the thread as a note.
@Suite("Ratings from the SDK", .timeLimit(.minutes(3)))
struct SDKRatingTests {
    @Test func theModelShowsTheRequestAndRatesOnce() async throws {
        try await withSDKServer({ $0.desk.commands = true }) { server in
            try await Self.rate(server)
        }
    }

    @MainActor
    static func rate(_ server: SDKHarness) async throws {
        let client = server.client()
        let conversation = SupportConversation(client: client, store: InMemoryConversationStore(), clock: ManualClock())
        let log = RatingLog(conversation)
        let requests = log.requests
        conversation.start()
        let live = ContinuousClock.now.advanced(by: .seconds(90))
        while conversation.connection != .live {
            guard ContinuousClock.now < live else { throw Missing(description: "the conversation was not live within 90 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        conversation.draft = "The export fails"
        conversation.send()
        let sent = ContinuousClock.now.advanced(by: .seconds(90))
        while conversation.messages.last?.delivery != .sent {
            guard ContinuousClock.now < sent else { throw Missing(description: "the first message was not sent within 90 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await server.settled()
        let threads = server.emulator.threads().filter { $0.name.contains("The export fails") }
        try #require(threads.count == 1, "the user's thread: \(server.emulator.threads().map(\.name))")
        let thread = threads[0].id
        _ = try server.emulator.replyAsAgent(inThread: thread, content: "Fixed on our side, try again")
        try await server.settled()
        _ = try server.emulator.runCommand("close", inChannel: thread)
        try await requests.wait(for: "the request on the screen", timeout: .seconds(90)) { $0.last.flatMap { $0 } != nil }
        #expect(conversation.ratingRequest != nil)

        try await conversation.rate(score: 5, comment: "Quick, thanks")
        try await requests.wait(for: "the request gone once rated", timeout: .seconds(90)) { $0.last.map { $0 == nil } ?? false }
        try await server.settled()
        let notes = server.emulator.messages(inThread: thread).filter { $0.content.contains("5/5") }
        #expect(notes.map(\.content) == [":ninja: ★★★★★ 5/5 — Quick, thanks"])
        // A second rating finds nothing waiting: refused before any request, the thread unchanged.
        await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: 1) }
        try await server.settled()
        #expect(server.emulator.messages(inThread: thread).filter { $0.content.contains("/5") }.count == 1)
        await conversation.stop()
    }
}

/// Every value of the model's `ratingRequest` a screen would have shown, through
/// `withObservationTracking`.
@MainActor
final class RatingLog {
    let conversation: SupportConversation
    let requests = Watched<[String?]>([])

    init(_ conversation: SupportConversation) {
        self.conversation = conversation
        record()
    }

    private func record() {
        let request = withObservationTracking { conversation.ratingRequest?.conversationId } onChange: { [weak self] in
            Task { @MainActor in self?.record() }
        }
        if requests.value.last != .some(request) { requests.update { $0.append(request) } }
    }
}
