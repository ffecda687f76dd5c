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
}
