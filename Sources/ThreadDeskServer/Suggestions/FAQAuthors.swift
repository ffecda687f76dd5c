import DiscordREST
import Synchronization

/// Who may write a curated answer. A forum lets every member create posts unless told otherwise,
/// and an answer is served to every user as support's word, so a post counts only when its
/// starter's author is the bot, a webhook of ThreadDesk's application, or a member who may use the
/// desk in the FAQ forum (`DeskAccess`, computed as Discord computes permissions there).
///
/// The guild's roles and the forum's overwrites are read at most once a minute (and afresh with
/// every full read of the forum, and when the gateway or another replica says they changed); a
/// member's roles come with the gateway's events, or are read when asked (a full read of the forum
/// asks once per author). Not an actor: forgetting must happen at once, in the order word of
/// changes arrives, before a later post is judged.
final class FAQAuthors: Sendable {
    private let discord: DiscordClient<AnyClock>
    private let bot: BotIdentity
    private let guildID: String
    private let forumID: String
    private let access: DeskAccess
    private let time: ServerTime
    /// How old what was read of the guild may be.
    static let maxAge: Duration = .seconds(60)

    /// What the permissions are computed from.
    private struct Rules {
        var ownerID: String?
        var roles: [String: DiscordPermissions]
        var overwrites: [DiscordPermissions.Overwrite]
        var readAt: Duration
    }

    /// What was read, and how many times it was forgotten: a read that began before the last
    /// forgetting is used once but not kept.
    private let rules = Mutex<(read: Rules?, forgotten: Int)>((nil, 0))
    private let application = Mutex<String?>(nil)

    init(discord: DiscordClient<AnyClock>, bot: BotIdentity, guildID: String, forumID: String, access: DeskAccess, time: ServerTime) {
        (self.discord, self.bot, self.guildID, self.forumID, self.access, self.time) = (discord, bot, guildID, forumID, access, time)
    }

    /// Whether `message`, a post's starter, speaks for support.
    func mayAnswer(_ message: DiscordMessage) async throws -> Bool {
        if message.author.id == (try await bot.id()).description { return true }
        // A webhook's message has no member behind it: only ThreadDesk's own application's counts.
        if message.webhookId != nil { return try await message.applicationId == applicationID() }
        guard let roles = try await roles(of: message) else { return false }
        let rules = try await currentRules()
        let held = DiscordPermissions.effective(
            guildID: guildID, ownerID: rules.ownerID, memberID: message.author.id, memberRoles: roles, rolePermissions: rules.roles,
            overwrites: rules.overwrites)
        return access.allows(held, roles: roles)
    }

    /// Forgets what was read of the guild: the next question reads it again.
    func forget() { rules.withLock { $0 = (nil, $0.forgotten + 1) } }

    /// The author's roles: the gateway's events carry them as they are now; REST's messages do
    /// not, so they are read. nil: no member of the guild (any more).
    private func roles(of message: DiscordMessage) async throws -> [String]? {
        if let member = message.member { return member.roles }
        do {
            return try await discord.guildMember(guildID: guildID, userID: message.author.id).roles
        } catch .api(let failure) where failure.status == 404 {
            return nil
        }
    }

    private func currentRules() async throws -> Rules {
        let now = time.elapsed()
        let (known, forgotten) = rules.withLock { $0 }
        if let known, now - known.readAt < Self.maxAge { return known }
        let guild = try await discord.guild(guildID)
        let forum = try await discord.channel(forumID)
        let read = Rules(
            ownerID: guild.ownerId,
            roles: guild.rolePermissions, overwrites: (forum.permissionOverwrites ?? []).map(\.overwrite), readAt: now)
        rules.withLock { if $0.forgotten == forgotten { $0.read = read } }
        return read
    }

    private func applicationID() async throws -> String {
        if let known = application.withLock({ $0 }) { return known }
        let id = try await discord.currentApplication().id
        application.withLock { $0 = id }
        return id
    }
}
