import AssistEmulator
import DiscordEmulator
import Foundation
import TestSupport
import Testing

@testable import ThreadDeskServer

/// `ASSIST_AUTO=away`: while support is away and one FAQ answer covers the question, the assistant
/// answers the user itself, once per conversation until an agent replies, labelled, streamed and
/// pushed like support; the away message still goes, and a note tells the agents what was said.
@Suite(.serialized) struct AwayAnswerTests {
    static let question = "How do I reset the router?"

    static func withAway(
        clock: ManualClock, drafts: Bool, _ body: @escaping @Sendable (Harness, AssistEmulator) async throws -> Void
    ) async throws {
        try await DraftTests.withAssist(time: .driven(by: clock, from: AwayTests.mondayEvening)) { configuration in
            configuration.desk.hours = try? SupportHours("UTC Mon-Fri 09:00-17:00")
            configuration.desk.awayMessage = AwayTests.awayText
            configuration.assist.auto = .away
            configuration.assist.drafts = drafts
        } _: { server, assist in
            try await body(server, assist)
        }
    }

    static func awayNotes(_ server: Harness, _ thread: String) -> [DiscordEmulator.MessageSnapshot] {
        server.emulator.messages(inThread: thread).filter { $0.content.hasPrefix(":ninja: 🤖 Support was away") }
    }

    @Test func whileAwayTheAssistantAnswersOnceUntilAnAgentReplies() async throws {
        let clock = ManualClock()
        try await Self.withAway(clock: clock, drafts: false) { server, assist in
            let post = try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the reset button for ten seconds, then wait for the green light.")
            try await server.settled()
            assist.script([.answer("Hold the reset button for ten seconds, then wait for the green light.")])
            let (user, thread, device) = try await server.userWithThread(first: Self.question)
            try await server.settled()

            // The away message's promise first, then the answer, as the assistant, labelled with its article.
            let shown = try await DraftTests.shown(server, user.token)
            #expect(shown.map(\.author) == ["user", "support", "assistant"])
            #expect(shown[1].content == AwayTests.awayText)
            let answer = try #require(shown.last?.content)
            #expect(answer.hasPrefix("Hold the reset button for ten seconds"))
            #expect(answer.contains("\u{201C}Reset the router\u{201D}"))
            // The model was asked from that article alone, and told to say NO_ANSWER otherwise.
            let request = try #require(assist.recordedRequests.first)
            #expect(assist.recordedRequests.count == 1)
            #expect(request.messages[0].content.contains("NO_ANSWER"))
            #expect(request.messages[1].content.contains("Hold the reset button for ten seconds, then wait for the green light."))
            // Pushed like support (the away message, silent, is not).
            let posted = try #require(server.emulator.messages(inThread: thread).last { $0.content.hasPrefix("Hold the reset button") })
            #expect(server.apns.deliveries(to: device).map(PushTests.messageID) == [posted.id])
            // The agents read what was said, and from which post.
            let note = try #require(Self.awayNotes(server, thread).first)
            #expect(Self.awayNotes(server, thread).count == 1)
            #expect(note.content.contains("<#\(post)>") && note.content.contains("Hold the reset button"))

            // Once per conversation: the next question while away gets no second answer.
            #expect(try await server.send("And how do I reset the router again?", token: user.token).status == .created)
            try await server.settled()
            #expect(try await DraftTests.shown(server, user.token).filter { $0.author == "assistant" }.count == 1)
            #expect(assist.recordedRequests.count == 1)

            // An agent replies; the next time the user asks while support is away, it answers again.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Did that help?")
            try await server.settled()
            assist.script([.answer("Hold the reset button for ten seconds.")])
            #expect(try await server.send("How do I reset the router? It is stuck again.", token: user.token).status == .created)
            try await server.settled()
            #expect(try await DraftTests.shown(server, user.token).filter { $0.author == "assistant" }.count == 2)
            #expect(assist.recordedRequests.count == 2)
            #expect(Self.awayNotes(server, thread).count == 2)
        }
    }

    @Test func insideTheHoursOnAWeakMatchOrWithoutAnAnswerItDraftsInstead() async throws {
        let clock = ManualClock()
        try await Self.withAway(clock: clock, drafts: true) { server, assist in
            _ = try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the reset button for ten seconds, then wait for the green light.")
            try await server.settled()

            // A question the FAQ does not cover well: no answer to the user, a draft for the agent.
            assist.script([.answer("Could you tell me more about the invoice?")])
            let (user, thread, _) = try await server.userWithThread(first: "My invoice from last month looks wrong, can someone check?")
            try await server.settled()
            #expect(try await DraftTests.shown(server, user.token).allSatisfy { $0.author != "assistant" })
            #expect(assist.recordedRequests.count == 1)
            #expect(DraftTests.draftNotes(server, thread).count == 1)
            #expect(Self.awayNotes(server, thread).isEmpty)

            // A strong match, but the model finds no answer in it: nothing to the user, a draft.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Looking into it.")
            try await server.settled()
            assist.script([.answer("NO_ANSWER"), .answer("Hold the reset button.")])
            #expect(try await server.send(Self.question, token: user.token).status == .created)
            try await server.settled()
            #expect(try await DraftTests.shown(server, user.token).allSatisfy { $0.author != "assistant" })
            #expect(assist.recordedRequests.count == 3)
            #expect(Self.awayNotes(server, thread).isEmpty)

            // Tuesday 10:00, support is in: a strong match is drafted, never answered.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Anything else?")
            try await server.settled()
            clock.advance(by: .seconds(14 * 3600))
            assist.script([.answer("Hold the reset button for ten seconds.")])
            #expect(try await server.send("How do I reset the router? Still stuck.", token: user.token).status == .created)
            try await server.settled()
            #expect(try await DraftTests.shown(server, user.token).allSatisfy { $0.author != "assistant" })
            #expect(assist.recordedRequests.count == 4)
            #expect(Self.awayNotes(server, thread).isEmpty)
        }
    }
}
