import DiscordREST

/// The FAQ forum: every post there is offered to users as support's answer when an agent wrote
/// it, and ignored otherwise. A forum lets every member create posts unless told otherwise, so the
/// doctor names who may post there without being allowed the desk: those posts would be no answers,
/// and the forum is support's voice.
extension Doctor {
    func faqCheck(_ discord: DiscordClient<AnyClock>, guild: DiscordGuild, bot: String, app: AppSettings) async -> DoctorCheck? {
        guard let id = app.faqChannelID else { return nil }
        let forum: DiscordChannel
        do {
            forum = try await discord.channel(id)
        } catch {
            return DoctorCheck(
                "discord.faq", failed: "the channel \(id) cannot be read (\(Self.short(error)))",
                fix: "check DISCORD_FAQ_CHANNEL_ID and that the bot may View Channel and Read Message History there")
        }
        guard forum.type == 15, forum.guildId == guild.id else {
            return DoctorCheck(
                "discord.faq", failed: "the channel \(id) is not a forum of the guild \(guild.id)",
                fix: "set DISCORD_FAQ_CHANNEL_ID to a forum channel of the guild DISCORD_GUILD_ID")
        }
        let access = DeskAccess(configuration.desk)
        let overwrites = (forum.permissionOverwrites ?? []).map(\.overwrite)
        /// Whether a member with `roles` (and `member`'s own overwrite) creates posts there without the desk.
        func postsWithoutTheDesk(roles: [String], member: String = "0") -> Bool {
            let held = DiscordPermissions.effective(
                guildID: guild.id, ownerID: guild.ownerId, memberID: member, memberRoles: roles, rolePermissions: guild.rolePermissions,
                overwrites: overwrites)
            return held.isSuperset(of: [.viewChannel, .sendMessages]) && !access.allows(held, roles: roles)
        }
        var open: [String] = []
        if postsWithoutTheDesk(roles: []) {
            // Everyone can: that is the one to fix first (every role inherits it).
            open = ["@everyone"]
        } else {
            for role in guild.roles where role.id != guild.id && role.tags?.botId != bot && postsWithoutTheDesk(roles: [role.id]) {
                open.append(role.name)
            }
            for overwrite in overwrites where overwrite.type == 1 && overwrite.id != bot && overwrite.allow.contains(.sendMessages) {
                let roles = (try? await discord.guildMember(guildID: guild.id, userID: overwrite.id).roles) ?? []
                if postsWithoutTheDesk(roles: roles, member: overwrite.id) { open.append("the member \(overwrite.id)") }
            }
        }
        guard open.isEmpty else {
            let who = open.joined(separator: ", ")
            return DoctorCheck(
                "discord.faq",
                failed: "members without \(access.requirement) can create posts in the FAQ forum (through \(who)); ThreadDesk serves no post of theirs as an answer, but they sit among support's",
                fix: "in the FAQ forum's settings (Edit Channel → Permissions) remove Create Posts (Send Messages) from \(who): set it to ✗ there")
        }
        return DoctorCheck("discord.faq", passed: "#\(forum.name ?? forum.id): only members with \(access.requirement) can create posts")
    }
}
