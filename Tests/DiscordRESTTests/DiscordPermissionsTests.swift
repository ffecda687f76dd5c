import DiscordREST
import Testing

/// Discord's documented computation of a member's permissions in a channel.
@Suite("Permissions")
struct DiscordPermissionsTests {
    let guild = "1"
    let member = "9"
    let moderators = "20"
    let helpers = "21"
    let base: DiscordPermissions = [.viewChannel, .sendMessages, .addReactions]

    func effective(roles: [String] = [], owner: String? = "2", _ overwrites: [DiscordPermissions.Overwrite]) -> DiscordPermissions {
        DiscordPermissions.effective(
            guildID: guild, ownerID: owner, memberID: member, memberRoles: roles,
            rolePermissions: [guild: base, moderators: [.manageThreads], helpers: [.attachFiles]], overwrites: overwrites)
    }

    @Test func theBaseIsEveryoneAndTheMembersRoles() {
        #expect(effective([]) == base)
        #expect(effective(roles: [moderators, helpers], []) == base.union([.manageThreads, .attachFiles]))
    }

    @Test func ownersAndAdministratorsHoldEverythingWhateverTheOverwrites() {
        let denyAll = DiscordPermissions.Overwrite(id: member, type: 1, allow: [], deny: .all)
        #expect(effective(owner: member, [denyAll]) == .all)
        let administrators = DiscordPermissions.effective(
            guildID: guild, ownerID: nil, memberID: member, memberRoles: ["30"], rolePermissions: ["30": .administrator],
            overwrites: [denyAll])
        #expect(administrators == .all)
    }

    /// `@everyone`'s overwrite first, then the roles' (an allow of one role beats a deny of
    /// another), then the member's own, which wins over both.
    @Test func overwritesApplyInDiscordsOrder() {
        let everyone = DiscordPermissions.Overwrite(id: guild, type: 0, allow: [], deny: [.addReactions, .sendMessages])
        #expect(effective([everyone]) == [.viewChannel])
        let roleAllows = DiscordPermissions.Overwrite(id: moderators, type: 0, allow: [.sendMessages], deny: [])
        let roleDenies = DiscordPermissions.Overwrite(id: helpers, type: 0, allow: [], deny: [.sendMessages])
        #expect(effective(roles: [moderators, helpers], [everyone, roleAllows, roleDenies]).contains(.sendMessages))
        let own = DiscordPermissions.Overwrite(id: member, type: 1, allow: [.addReactions], deny: [.sendMessages])
        let result = effective(roles: [moderators, helpers], [everyone, roleAllows, roleDenies, own])
        #expect(result.contains(.addReactions) && !result.contains(.sendMessages))
        // An overwrite for a role the member does not have changes nothing.
        #expect(effective([DiscordPermissions.Overwrite(id: helpers, type: 0, allow: [.manageWebhooks], deny: [])]) == base)
    }

    @Test func withoutViewChannelNothingIsLeft() {
        let hidden = DiscordPermissions.Overwrite(id: member, type: 1, allow: [], deny: [.viewChannel])
        #expect(effective([hidden]) == [])
        #expect(DiscordPermissions([.addReactions, .viewChannel]).names == ["View Channel", "Add Reactions"])
    }
}
