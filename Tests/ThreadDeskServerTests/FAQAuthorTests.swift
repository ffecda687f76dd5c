import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
@testable import ThreadDeskServer

/// A forum lets every member create posts; only those of members who may use the desk (and the
/// bot's) are answers, at start, through the gateway, and after who may changed.
@Suite("Who writes the FAQ", .timeLimit(.minutes(3)))
struct FAQAuthorTests {
    static let manageThreads: UInt64 = 1 << 34

    /// Members of the emulated guild: a stranger (no role) and a helper, whose role gives Manage
    /// Threads across the guild (not the owner: their permissions are computed).
    struct People: Sendable {
        var agents: String
        var helper: String
        var stranger: String

        init(_ emulator: DiscordEmulator) throws {
            agents = emulator.createRole(named: "Agents", permissions: FAQAuthorTests.manageThreads)
            helper = try emulator.addMember(named: "helper", roles: [agents])
            stranger = try emulator.addMember(named: "stranger")
        }
    }

    static func titles(_ server: Harness, _ query: String, token: String) async throws -> [String] {
        try await SuggestionTests.titles(server, query, token: token)
    }

    @Test func aStrangersPostAndEditsAreNoAnswerWhileAnAgentsAre() async throws {
        try await withServer(gateway: true, prepare: SuggestionTests.faq) { server in
            let user = try await server.session()
            try await SuggestionTests.settled(server, posts: 0)
            let people = try People(server.emulator)
            // The stranger first: once the helper's post (heard after it) is an answer, the
            // stranger's was judged.
            let phishing = try server.emulator.postFAQ(
                title: "Reset your password", answer: "Reset it at https://evil.example", as: people.stranger)
            let router = try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the button for ten seconds.", as: people.helper)
            try await server.settled()
            try #require(try await Self.titles(server, "router", token: user.token) == ["Reset the router"], "the helper's post")
            #expect(try await Self.titles(server, "reset", token: user.token) == ["Reset the router"])
            #expect(try await Self.titles(server, "password evil", token: user.token).isEmpty)

            // The stranger's edit changes nothing; the helper's edit after it is taken.
            try server.emulator.editMessage(phishing, inChannel: phishing, content: "Reset it at https://evil.example\nkeywords: modem", as: people.stranger)
            try server.emulator.editMessage(router, inChannel: router, content: "Unplug it for a minute.\nkeywords: modem", as: people.helper)
            try await server.settled()
            try #require(try await server.request(.get, "/v1/suggestions?q=modem", token: user.token).json["suggestions"]?[0]?["answer"] == "Unplug it for a minute.", "the helper's edit")
            #expect(try await Self.titles(server, "modem", token: user.token) == ["Reset the router"])

            // The forum's overwrite takes Manage Threads from the helper's role there (a
            // CHANNEL_UPDATE): their next edit makes the post no answer.
            try server.emulator.setOverwrite(on: server.emulator.faqChannelID, for: people.agents, deny: Self.manageThreads)
            try server.emulator.editMessage(router, inChannel: router, content: "Unplug it for a minute or two.", as: people.helper)
            try await server.settled()
            try #require(try await Self.titles(server, "router", token: user.token).isEmpty, "the helper's post no answer")
        }
    }

    /// What the forum holds at start: the owner's and the helper's posts are answers, the
    /// stranger's is not.
    @Test func theStartUpReadTakesOnlyPostsOfMembersWhoMayUseTheDesk() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            configuration.faqChannelID = emulator.faqChannelID
            guard let people = try? People(emulator) else { return }
            _ = try? emulator.postFAQ(title: "Cancel my subscription", answer: "The App Store manages it.")
            _ = try? emulator.postFAQ(title: "Reset the router", answer: "Hold the button.", as: people.helper)
            _ = try? emulator.postFAQ(title: "Reset your password", answer: "At https://evil.example", as: people.stranger)
        }
        try await withServer(gateway: true, prepare: prepare) { server in
            let user = try await server.session()
            try await SuggestionTests.settled(server, posts: 3)
            try await server.settled()
            let subscription = try await Self.titles(server, "subscription", token: user.token)
            let router = try await Self.titles(server, "router", token: user.token)
            try #require(subscription == ["Cancel my subscription"] && router == ["Reset the router"], "the answers loaded")
            // Read in the same pass as the two answers.
            #expect(try await Self.titles(server, "reset password", token: user.token) == ["Reset the router"])
        }
    }

    /// With `DESK_ROLE_ID`, Manage Threads alone is not enough: the role is needed too.
    @Test func withADeskRoleOnlyItsMembersWrite() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            configuration.faqChannelID = emulator.faqChannelID
            configuration.desk.roleID = emulator.createRole(named: "support")
        }
        try await withServer(gateway: true, prepare: prepare) { server in
            let user = try await server.session()
            try await SuggestionTests.settled(server, posts: 0)
            let people = try People(server.emulator)
            let member = try server.emulator.addMember(
                named: "desk", roles: [try #require(server.configuration.desk.roleID), people.agents])
            try server.emulator.postFAQ(title: "Reset your password", answer: "In Settings.", as: people.helper)
            try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the button.", as: member)
            try await server.settled()
            try #require(try await Self.titles(server, "router", token: user.token) == ["Reset the router"], "the member's post")
            #expect(try await Self.titles(server, "password", token: user.token).isEmpty)
        }
    }
}
