import DiscordEmulator
import Testing
import ThreadDeskServer

/// `threaddesk doctor` on the FAQ forum: who may create posts there without the desk's
/// permission, named with what to take away.
@Suite("Doctor: the FAQ forum")
struct DoctorFAQTests {
    static let createPosts: UInt64 = 1 << 11
    static let manageThreads: UInt64 = 1 << 34

    /// A forum as Discord makes it: everyone may post. `@everyone` is named.
    @Test func aForumOpenToEveryoneFails() async throws {
        try await DoctorTests().withDoctor(faq: true) { report, _, _, _ in
            let check = try #require(report.check("discord.faq"))
            #expect(!check.passed && report.failed.map(\.name) == ["discord.faq"])
            #expect(check.detail.contains("without Manage Threads") && check.detail.contains("through @everyone"))
            #expect(check.fix?.contains("remove Create Posts (Send Messages) from @everyone") == true)
        }
    }

    /// `@everyone` denied, but a role without Manage Threads allowed by the forum's overwrite; a
    /// role with Manage Threads allowed too, which is fine.
    @Test func aRoleAllowedToPostWithoutTheDesksPermissionIsNamed() async throws {
        try await DoctorTests().withDoctor(faq: true, prepare: { emulator in
            let helpers = emulator.createRole(named: "Helpers")
            let agents = emulator.createRole(named: "Agents", permissions: Self.manageThreads)
            try emulator.setOverwrite(on: emulator.faqChannelID, for: emulator.guildID, deny: Self.createPosts)
            try emulator.setOverwrite(on: emulator.faqChannelID, for: helpers, allow: Self.createPosts)
            try emulator.setOverwrite(on: emulator.faqChannelID, for: agents, allow: Self.createPosts)
        }) { report, _, _, _ in
            let check = try #require(report.check("discord.faq"))
            #expect(!check.passed && check.detail.contains("through Helpers)"))
            #expect(check.fix?.contains("from Helpers") == true)
        }
    }

    @Test func onlyAgentsPostingPasses() async throws {
        try await DoctorTests().withDoctor(faq: true, prepare: { emulator in
            let agents = emulator.createRole(named: "Agents", permissions: Self.manageThreads)
            try emulator.setOverwrite(on: emulator.faqChannelID, for: emulator.guildID, deny: Self.createPosts)
            try emulator.setOverwrite(on: emulator.faqChannelID, for: agents, allow: Self.createPosts)
        }) { report, _, _, _ in
            #expect(report.passed, "\(report.text)")
            #expect(report.check("discord.faq")?.detail.contains("only members with Manage Threads can create posts") == true)
        }
    }
}
