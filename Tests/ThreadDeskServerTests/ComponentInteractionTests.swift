import DiscordEmulator
import DiscordREST
import Testing
@testable import ThreadDeskServer

/// Button clicks and modal submits now reach the server through the gateway; until drafts answer
/// them, the desk leaves them alone and keeps answering commands.
@Suite("Component interactions at the desk", .timeLimit(.minutes(3)))
struct ComponentInteractionTests {
    @Test func aClickReachesTheDeskAndBreaksNothing() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            let (_, thread, _) = try await server.userWithThread()
            let row = try DiscordActionRow([try DiscordButton(.primary, label: "Send", customId: "draft:send:1")])
            let note = try await server.discordClient.createMessage(in: thread, DiscordMessageCreate(content: ":ninja: draft", components: [row]))
            try await server.settled()
            let click = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: "draft:send:1")
            // A command after the click is answered: the click neither stopped nor broke the desk.
            let card = try await DeskTests.run(server, "user", in: thread)
            #expect(card.ephemeral && card.content?.isEmpty == false)
            #expect(server.emulator.interaction(click.id)?.acknowledged == false)
            #expect(server.emulator.messages(inThread: thread).contains { $0.id == note.id && $0.buttons.count == 1 })
        }
    }

    /// A draft note's button clicked after the assistant went off reaches the desk, which says so
    /// (the root hands the desk the drafts' rule): the agent is not left without an answer.
    @Test func aDraftsButtonWhileDraftsAreOffIsAnsweredByTheDesk() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            let (_, thread, _) = try await server.userWithThread()
            let id = "td1:1234567890123456789:s"
            let row = try DiscordActionRow([try DiscordButton(.primary, label: "Send", customId: id)])
            let note = try await server.discordClient.createMessage(in: thread, DiscordMessageCreate(content: ":ninja: draft", components: [row]))
            try await server.settled()
            let click = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: id)
            try await server.settled()
            let answer = try #require(server.emulator.interaction(click.id))
            #expect(answer.acknowledged && answer.ephemeral)
            #expect(answer.content?.contains("Drafted answers are off now") == true)
            #expect(server.emulator.messages(inThread: thread).contains { $0.id == note.id && $0.buttons.count == 1 }, "nothing sent, the note kept")
        }
    }
}
