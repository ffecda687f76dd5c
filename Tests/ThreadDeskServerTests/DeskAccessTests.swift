import DiscordEmulator
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer

/// The desk checks its caller itself, runs only in its conversations, and shows the app's values
/// as text: what Discord offers and what the app sends are not to be trusted.
@Suite("The desk's guard", .timeLimit(.minutes(3)))
struct DeskAccessTests {
    static let manageThreads: UInt64 = 1 << 34

    /// An admin allowed the commands to everyone under Integrations: Discord offers them to a
    /// stranger, and ThreadDesk refuses the stranger (commands and autocomplete), and a helper
    /// whose role's Manage Threads the support forum's overwrite takes away.
    @Test func membersWithoutTheDesksPermissionAreRefusedWhateverDiscordOffers() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            let (_, thread, _) = try await server.userWithThread()
            let emulator = server.emulator
            let stranger = try emulator.addMember(named: "stranger")
            let agents = emulator.createRole(named: "Agents", permissions: Self.manageThreads)
            let helper = try emulator.addMember(named: "helper", roles: [agents])
            try await server.settled()
            try #require(emulator.commands.contains { $0.name == "close" }, "the commands registered")
            // Discord itself does not offer them to the stranger…
            let unoffered = #expect(throws: DiscordFailure.self) { try emulator.runCommand("close", inChannel: thread, as: stranger) }
            #expect(unoffered?.code == 50013)
            // …until an admin says so under Integrations.
            try emulator.allowCommandsInIntegrations(for: server.discord.guildID)
            let refused = try await DeskTests.run(server, "close", in: thread, as: stranger)
            #expect(refused.ephemeral && refused.callbackType == 4 && refused.content?.contains("Manage Threads") == true)
            try await DeskTests.run(server, "snippets", in: thread, [.subcommand("add", [.string("name", "hello"), .string("text", "Hi!")])])
            let typed = try emulator.autocomplete("snippet", inChannel: thread, options: [.string("name", "he", focused: true)], as: stranger)
            try await server.settled()
            try #require(emulator.interaction(typed.id)?.acknowledged == true, "the stranger's autocomplete answered")
            #expect(emulator.interaction(typed.id)?.choices == [])

            // The helper holds Manage Threads through a role: allowed; then the forum's overwrite
            // takes it from that role there, and Discord's computed permissions say so.
            let card = try await DeskTests.run(server, "user", in: thread, as: helper)
            #expect(card.content?.contains("**User**") == true)
            try emulator.setOverwrite(on: server.discord.forumChannelID, for: agents, deny: Self.manageThreads)
            let denied = try await DeskTests.run(server, "close", in: thread, as: helper)
            #expect(denied.content?.contains("Manage Threads") == true)
            // Nothing was closed by either: the owner's command after them is the first to.
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            try #require(DeskTests.thread(server, thread)?.archived == true, "closed by the owner")
            #expect(emulator.recordedRequests.filter { $0.method == "PATCH" && $0.body?["archived"] == .bool(true) }.count == 1)
        }
    }

    /// `/away` and `/snippets` in a FAQ post (or anywhere but a ThreadDesk thread) change nothing.
    @Test func awayAndSnippetsRunOnlyInsideAConversation() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            DeskTests.deskOn(&configuration)
            configuration.faqChannelID = emulator.faqChannelID
        }
        try await withServer(gateway: true, prepare: prepare) { server in
            let (user, thread, _) = try await server.userWithThread()
            let post = try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the button.")
            let away = try await DeskTests.run(server, "away", in: post, [.subcommand("on")])
            #expect(away.content?.contains("inside a ThreadDesk conversation") == true)
            let added = try await DeskTests.run(
                server, "snippets", in: post, [.subcommand("add", [.string("name", "phish"), .string("text", "Log in at https://evil.example")])])
            #expect(added.content?.contains("inside a ThreadDesk conversation") == true)
            #expect(try await server.request(.get, "/v1/support-status", token: user.token).json == ["status": "open"])
            let list = try await DeskTests.run(server, "snippets", in: thread, [.subcommand("list")])
            #expect(list.content?.contains("No snippets yet") == true)
        }
    }

    /// The card's unread count is the badge's: support replies the user has not read.
    @Test func theUserCardCountsWhatTheUserHasNotRead() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            let (user, thread, _) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Try restarting")
            try await server.settled()
            try #require(try await server.request(.get, "/v1/unread", token: user.token).json["count"] == 1, "the reply unread")
            #expect(try await DeskTests.run(server, "user", in: thread).content?.contains("**Unread** 1 ·") == true)
            #expect(try await server.request(.post, "/v1/read", token: user.token, json: #"{"messageId":"\#(reply.id)"}"#).status == .ok)
            #expect(try await DeskTests.run(server, "user", in: thread).content?.contains("**Unread** 0 ·") == true)
        }
    }

    /// A masked link in the app's device info is text on the card and in a snippet posted under
    /// the agent's name, as in the device note.
    @Test func theAppsValuesAreShownAsTextNeverAsLinks() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            let model = "x [Verify](https://evil.example) y"
            let user = try await server.session(#"{"installation":{"appVersion":"3.0","deviceModel":"\#(model)"}}"#)
            #expect(try await server.send("hi", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let card = try #require(try await DeskTests.run(server, "user", in: thread).content)
            #expect(!card.contains("[Verify](") && card.contains(DiscordMarkdown.escaped(model)))
            try await DeskTests.run(server, "snippets", in: thread, [.subcommand("add", [.string("name", "device"), .string("text", "On {device}?")])])
            let sent = try await DeskTests.run(server, "snippet", in: thread, [.string("name", "device")])
            #expect(sent.content?.contains("Sent") == true)
            let posted = try #require(server.emulator.messages(inThread: thread).last)
            #expect(posted.webhookID != nil && posted.content == "On \(DiscordMarkdown.escaped(model))?")
        }
    }
}
