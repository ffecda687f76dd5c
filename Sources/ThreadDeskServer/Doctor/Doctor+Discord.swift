import DiscordREST
import Foundation
import Logging

/// The Discord side: the token, the Message Content intent, a real identify, the guild, the
/// forum, the bot's permissions in it, the forum's tags, and who may post in the FAQ forum.
extension Doctor {
    func discordChecks() async -> [DoctorCheck] {
        let discord = DiscordClient<AnyClock>(
            configuration: .init(baseURL: configuration.discordAPIURL, token: configuration.discordToken), logger: logger)
        var checks: [DoctorCheck] = []
        let bot: DiscordUser
        do {
            bot = try await discord.currentUser()
            checks.append(DoctorCheck("discord.token", passed: "the bot \(bot.username) (\(bot.id))"))
        } catch {
            checks.append(Self.tokenFailure(error, url: configuration.discordAPIURL))
            return checks
        }
        do {
            let application = try await discord.currentApplication()
            checks.append(
                application.hasMessageContentIntent
                    ? DoctorCheck("discord.intent", passed: "Message Content Intent on")
                    : DoctorCheck(
                        "discord.intent", failed: "the application's Message Content Intent is off (replies would arrive empty)",
                        fix: Self.intentFix))
        } catch {
            checks.append(DoctorCheck("discord.intent", failed: "cannot read the application: \(error)", fix: "check that DISCORD_TOKEN is a bot token"))
        }
        checks.append(await gatewayCheck(discord))
        let catalog = configuration.catalog
        for app in catalog.apps {
            // Each app's guild, forum, permissions and tags, each finding naming the app when there are several.
            let found = await appChecks(app, discord: discord, bot: bot)
            checks += catalog.isShared ? found.checks.map { $0.naming(app) } : found.checks
            // The app's FAQ forum once its support forum's checks got through.
            if found.completed, let guild = found.guild, let faq = await faqCheck(discord, guild: guild, bot: bot.id, app: app) {
                checks.append(catalog.isShared ? faq.naming(app) : faq)
            }
        }
        return checks
    }

    /// The checks of one app's guild and forum, and its guild when it could be read.
    private func appChecks(
        _ app: AppSettings, discord: DiscordClient<AnyClock>, bot: DiscordUser
    ) async -> (checks: [DoctorCheck], guild: DiscordGuild?, completed: Bool) {
        let shared = configuration.catalog.isShared
        let guildSetting = shared ? "the app's guildID in APPS_FILE (or DISCORD_GUILD_ID)" : "DISCORD_GUILD_ID"
        let forumSetting = shared ? "the app's forumChannelID in APPS_FILE" : "DISCORD_FORUM_CHANNEL_ID"
        var checks: [DoctorCheck] = []
        let guild: DiscordGuild
        do {
            guild = try await discord.guild(app.guildID)
            checks.append(DoctorCheck("discord.guild", passed: "\(guild.name) (\(guild.id))"))
        } catch {
            checks.append(
                DoctorCheck(
                    "discord.guild", failed: "the guild \(app.guildID) cannot be read (\(Self.short(error)))",
                    fix: "check \(guildSetting) (Developer Mode → right-click the server → Copy Server ID) and invite the bot there"))
            return (checks, nil, false)
        }
        let forum: DiscordChannel
        do {
            forum = try await discord.channel(app.forumChannelID)
        } catch {
            checks.append(
                DoctorCheck(
                    "discord.forum", failed: "the channel \(app.forumChannelID) cannot be read (\(Self.short(error)))",
                    fix: "check \(forumSetting) and that the bot may View Channel there"))
            return (checks, guild, false)
        }
        guard forum.type == 15, forum.guildId == app.guildID else {
            checks.append(
                DoctorCheck(
                    "discord.forum",
                    failed: forum.type == 15
                        ? "the forum \(forum.id) belongs to another guild (\(forum.guildId ?? "none"))"
                        : "the channel \(forum.id) is not a forum (type \(forum.type), a forum is 15)",
                    fix: "set \(forumSetting) to a forum channel of the guild \(shared ? app.guildID : "DISCORD_GUILD_ID")"))
            return (checks, guild, false)
        }
        checks.append(DoctorCheck("discord.forum", passed: "#\(forum.name ?? forum.id) (\(forum.id)), a forum"))
        let permissions: DiscordPermissions
        do {
            let member = try await discord.guildMember(guildID: guild.id, userID: bot.id)
            permissions = DiscordPermissions.effective(
                guildID: guild.id, ownerID: guild.ownerId, memberID: bot.id, memberRoles: member.roles, rolePermissions: guild.rolePermissions,
                overwrites: (forum.permissionOverwrites ?? []).map(\.overwrite))
            checks.append(permissionCheck(permissions))
        } catch {
            checks.append(
                DoctorCheck(
                    "discord.permissions", failed: "the bot's roles cannot be read (\(Self.short(error)))",
                    fix: "invite the bot to the guild with the bot scope"))
            return (checks, guild, false)
        }
        checks.append(tagCheck(forum, permissions: permissions, defaultTagID: app.defaultTagID))
        return (checks, guild, true)
    }

    /// What ThreadDesk needs in the forum, with this configuration.
    var requiredPermissions: DiscordPermissions {
        var needed: DiscordPermissions = [
            .viewChannel, .sendMessages, .sendMessagesInThreads, .attachFiles, .readMessageHistory, .addReactions,
        ]
        if configuration.statusTags != nil || configuration.desk.commands { needed.formUnion([.manageThreads, .manageWebhooks]) }
        return needed
    }

    func permissionCheck(_ held: DiscordPermissions) -> DoctorCheck {
        let missing = requiredPermissions.subtracting(held)
        guard missing.isEmpty else {
            return DoctorCheck(
                "discord.permissions", failed: "in the forum the bot lacks \(missing.names.joined(separator: ", "))",
                fix: "in the forum's settings (Edit Channel → Permissions) allow the bot's role or the bot: \(missing.names.joined(separator: ", "))")
        }
        return DoctorCheck("discord.permissions", passed: "the bot holds \(requiredPermissions.names.joined(separator: ", ")) in the forum")
    }

    /// A forum that requires a tag needs one ThreadDesk can apply: DISCORD_DEFAULT_TAG_ID, or the
    /// forum's first tag; a moderated tag only with Manage Threads.
    func tagCheck(_ forum: DiscordChannel, permissions: DiscordPermissions, defaultTagID: String?) -> DoctorCheck {
        guard forum.requiresTag else { return DoctorCheck("discord.tags", passed: "posts need no tag") }
        let tags = forum.availableTags ?? []
        let chosen: DiscordForumTag?
        if let id = defaultTagID {
            chosen = tags.first { $0.id == id }
            guard chosen != nil else {
                return DoctorCheck(
                    "discord.tags", failed: "the forum requires a tag and DISCORD_DEFAULT_TAG_ID \(id) is none of its tags",
                    fix: "set DISCORD_DEFAULT_TAG_ID to one of: \(tags.map { "\($0.id) (\($0.name))" }.joined(separator: ", "))")
            }
        } else {
            chosen = tags.first
        }
        guard let chosen else {
            return DoctorCheck(
                "discord.tags", failed: "the forum requires a tag but has none",
                fix: "add a tag to the forum, or turn off Require Tags in its settings")
        }
        if chosen.moderated == true && !permissions.contains(.manageThreads) {
            return DoctorCheck(
                "discord.tags", failed: "the default tag \(chosen.name) is moderated and the bot lacks Manage Threads",
                fix: "allow the bot Manage Threads in the forum, or choose an unmoderated tag (DISCORD_DEFAULT_TAG_ID)")
        }
        return DoctorCheck("discord.tags", passed: "posts require a tag; ThreadDesk applies \(chosen.name) (\(chosen.id))")
    }

    static let intentFix = "turn on Message Content Intent in the Developer Portal (your application → Bot → Privileged Gateway Intents)"

    static func tokenFailure(_ error: DiscordError, url: String) -> DoctorCheck {
        if case .api(let api) = error, api.status == 401 {
            return DoctorCheck(
                "discord.token", failed: "Discord refused the bot token (401)",
                fix: "copy a new token into DISCORD_TOKEN (Developer Portal → your application → Bot → Reset Token)")
        }
        return DoctorCheck(
            "discord.token", failed: "Discord cannot be reached at \(url) (\(short(error)))",
            fix: "check DISCORD_API_URL and the machine's network")
    }

    /// An error in a few words (Discord's status and code, never the request's headers).
    static func short(_ error: DiscordError) -> String {
        if case .api(let api) = error { return "\(api.status) \(api.message)" }
        return "\(error)"
    }
}
