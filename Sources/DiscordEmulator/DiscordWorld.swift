import Deadlines
import DiscordREST
import Foundation
import Synchronization

/// The emulated guild: channels, messages, nonces, gateway sessions and counters, behind one lock.
/// Every mutation that Discord would announce dispatches its gateway event under the same lock, so
/// event order always matches the order of the changes.
final class DiscordWorld: Sendable {
    struct State: Sendable {
        var users: [Snowflake: EmulatedUser] = [:]
        var channels: [Snowflake: EmulatedChannel] = [:]
        /// Per channel, oldest first.
        var messages: [Snowflake: [EmulatedMessage]] = [:]
        var nonces: [NonceKey: Snowflake] = [:]
        var counters = DiscordEmulator.Counters()
        var rateLimits = RateLimitTable()
        var gateway = GatewayRegistry()
        var requestLog: [DiscordEmulator.RecordedRequest] = []
        var faults = Faults()
        var identifyRemaining: Int
        /// When the current `session_start_limit` window began (its first identify), if it has.
        var identifyWindowStart: Duration?
        /// The latest identifies of each `max_concurrency` bucket, oldest first.
        var recentIdentifies: [Int: [Duration]] = [:]
        /// The guild's application commands, in the order last registered.
        var commands: [EmulatedCommand] = []
        /// When each command created in the last `commandCreateWindow` was created.
        var commandCreates: [Duration] = []
        var interactions: [Snowflake: EmulatedInteraction] = [:]
        /// Roles and members (the guild's id: everyone) an admin allowed the application's
        /// commands under Server Settings → Integrations, whatever `default_member_permissions` says.
        var commandsAllowedFor: Set<Snowflake> = []
        var webhooks: [Snowflake: EmulatedWebhook] = [:]
        var roles: [EmulatedRole] = []
        /// Each member's roles (members not listed have none).
        var memberRoles: [Snowflake: [Snowflake]] = [:]
        /// Each member's client language (`en-US` when not set), which their interactions carry.
        var memberLocales: [Snowflake: String] = [:]
        var everyonePermissions = Permissions.everyone
        /// The Message Content intent's switch in the Developer Portal (`Configuration` sets it first).
        var messageContentIntentEnabled = true

        /// Whether one more identify in `bucket` fits `max_concurrency`; if so it is counted.
        mutating func takeIdentifySlot(bucket: Int, now: Duration, _ configuration: DiscordEmulator.Configuration) -> Bool {
            var recent = (recentIdentifies[bucket] ?? []).filter { now - $0 < configuration.identifyConcurrencyWindow }
            guard recent.count < max(1, configuration.maxConcurrency) || configuration.identifyConcurrencyWindow <= .zero else {
                recentIdentifies[bucket] = recent
                return false
            }
            recent.append(now)
            recentIdentifies[bucket] = recent
            return true
        }

        /// The identifies left now, and how long until the budget refills; a window that has
        /// passed refills first.
        mutating func identifyBudget(now: Duration, _ configuration: DiscordEmulator.Configuration) -> (remaining: Int, resetAfter: Duration) {
            if let start = identifyWindowStart, now - start >= configuration.identifyWindow {
                identifyRemaining = configuration.identifyBudget
                identifyWindowStart = nil
            }
            let elapsed = identifyWindowStart.map { now - $0 } ?? .zero
            return (identifyRemaining, configuration.identifyWindow - elapsed)
        }
    }

    struct NonceKey: Hashable, Sendable {
        var channelID: Snowflake
        var authorID: Snowflake
        var nonce: String
    }

    struct Faults: Sendable {
        var serverErrors = 0
        /// Requests let through before the injected errors start.
        var serverErrorsAfter = 0
        var serverErrorStatus = 500
        var latency: Duration = .zero
        /// The next requests answered as Cloudflare answers a banned IP: 429, HTML, this Retry-After.
        var edge429s = 0
        var edge429RetryAfter = "3600"
        /// A raw `X-RateLimit-Reset-After` value put on every answer (malformed values included).
        var resetAfterOverride: String?
        /// Requests (by `"METHOD /route/{template}"`) that take effect but whose answer is lost:
        /// how many more of each.
        var lostAnswers: [String: Int] = [:]
        /// Requests (by `"METHOD /route/{template}"`) answered with a server error, without
        /// effect: how many more of each, and the status.
        var routeErrors: [String: (count: Int, status: Int, after: Int)] = [:]
        /// CDN downloads answered with a redirect off the CDN (to `/not-the-cdn/…`): how many more.
        var cdnRedirects = 0
        /// Routes (by `"METHOD /route/{template}"`) whose requests wait, once counted as
        /// arrived, until the test releases them: a call caught in flight.
        var held: Set<String> = []
    }

    let configuration: DiscordEmulator.Configuration
    let ids = SnowflakeGenerator()
    let guildID: Snowflake
    /// A second guild the bot is in (apps may live in different guilds of one bot): the same
    /// roles and members as the first, and no channels until an admin makes one
    /// (`POST /guilds/{guild}/channels`).
    let secondGuildID: Snowflake
    let forumID: Snowflake
    /// A second forum, for curated answers (ThreadDesk's `DISCORD_FAQ_CHANNEL_ID`).
    let faqForumID: Snowflake
    let applicationID: Snowflake
    let bot: EmulatedUser
    let agent: EmulatedUser
    let token: String
    let state: Mutex<State>
    /// Woken as requests and gateway frames come (`DiscordEmulator.waitUntil`).
    let observers = ChangeSignal()
    private let baseURLStorage = Mutex<String>("")
    /// The CDN's signing key and how far a test moved its clock forward (`DiscordWorld+CDN`).
    let cdnKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
    let clockOffset = Mutex<TimeInterval>(0)

    init(configuration: DiscordEmulator.Configuration) {
        self.configuration = configuration
        let bot = EmulatedUser(id: ids.next(), username: "ThreadDesk", globalName: nil, isBot: true)
        let agent = EmulatedUser(id: ids.next(), username: "support-agent", globalName: "Support Agent", isBot: false)
        self.bot = bot
        self.agent = agent
        self.applicationID = bot.id
        self.guildID = ids.next()
        self.forumID = ids.next()
        self.token = Self.makeToken(botID: bot.id)
        var state = State(identifyRemaining: configuration.identifyBudget)
        state.messageContentIntentEnabled = configuration.messageContentIntentEnabled
        state.users[bot.id] = bot
        state.users[agent.id] = agent
        // Invited with the permissions the README asks for: Discord gives the bot a managed role.
        let botRole = EmulatedRole(
            id: ids.next(), name: bot.username, position: 1, permissions: Permissions.bot & ~Permissions.everyone, botID: bot.id)
        state.roles.append(botRole)
        state.memberRoles[bot.id] = [botRole.id]
        state.channels[forumID] = EmulatedChannel(
            id: forumID, type: .guildForum, name: configuration.forumName,
            availableTags: [(ids.next(), "open"), (ids.next(), "ios")]
        )
        self.faqForumID = ids.next()
        state.channels[faqForumID] = EmulatedChannel(
            id: faqForumID, type: .guildForum, name: configuration.faqForumName,
            availableTags: [(ids.next(), "television"), (ids.next(), "billing")]
        )
        // Last, so every earlier id stays what it was before there was a second guild.
        self.secondGuildID = ids.next()
        self.state = Mutex(state)
    }

    /// Whether `id` is one of the bot's guilds.
    func isGuild(_ id: Snowflake) -> Bool { guilds.contains(id) }

    /// The bot's guilds: the first, and the second when the configuration has one.
    var guilds: [Snowflake] { configuration.secondGuild ? [guildID, secondGuildID] : [guildID] }

    /// The guild `channel` is in.
    func guild(of channel: EmulatedChannel?) -> Snowflake { channel?.guildID ?? guildID }

    var baseURL: String {
        get { baseURLStorage.withLock { $0 } }
        set { baseURLStorage.withLock { $0 = newValue } }
    }

    /// Discord's token shape: base64 of the bot's id, a timestamp part and an HMAC-like part.
    private static func makeToken(botID: Snowflake) -> String {
        let idPart = Data(botID.description.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        func randomPart(_ count: Int) -> String {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            return String((0..<count).map { _ in alphabet.randomElement()! })
        }
        return "\(idPart).\(randomPart(6)).\(randomPart(38))"
    }

    // MARK: JSON views

    /// A message as Discord shows it. Discord keeps no nonce: it is in the answer to the create
    /// (`withNonce`) and in `MESSAGE_CREATE` only, never in a read, an edit or `MESSAGE_UPDATE`.
    func json(_ message: EmulatedMessage, in state: State, withNonce: Bool = false) -> JSON {
        let author = state.users[message.authorID] ?? bot
        var object: [String: JSON] = [
            "id": .string(message.id.description),
            "channel_id": .string(message.channelID.description),
            "guild_id": .string(guildID.description),
            "author": message.origin.webhookAuthor ?? author.json,
            "content": .string(message.content),
            "timestamp": .string(ISO8601.string(message.createdAt)),
            "edited_timestamp": JSON(message.editedAt.map(ISO8601.string)),
            "tts": false,
            "mention_everyone": .bool(message.mentionEveryone),
            "mentions": .array(message.mentionIDs.compactMap { state.users[$0]?.json }),
            "mention_roles": .array(message.mentionRoleIDs.map { .string($0.description) }),
            "attachments": .array(message.attachments.map { $0.json(url: signedURL(channelID: message.channelID, attachment: $0)) }),
            "embeds": [],
            "components": .array(message.components),
            "pinned": false,
            "type": JSON(message.type),
            "flags": JSON(message.flags),
        ]
        if withNonce, let nonce = message.nonce { object["nonce"] = nonce }
        if let webhookID = message.origin.webhookID { object["webhook_id"] = .string(webhookID.description) }
        if let application = message.origin.applicationID { object["application_id"] = .string(application.description) }
        if let metadata = message.origin.interactionMetadata { object["interaction_metadata"] = metadata }
        if let reference = message.reference {
            object["message_reference"] = [
                "type": 0,
                "message_id": .string(reference.description),
                "channel_id": .string(message.channelID.description),
                "guild_id": .string(guildID.description),
            ]
            let referenced = state.messages[message.channelID]?.first { $0.id == reference }
            object["referenced_message"] = referenced.map { json($0, in: state) } ?? .null
        }
        if !message.reactions.isEmpty {
            object["reactions"] = .array(
                message.reactions.map { emoji in
                    [
                        "count": 1, "me": true, "me_burst": false, "burst_count": 0, "burst_colors": [],
                        "count_details": ["burst": 0, "normal": 1],
                        "emoji": ["id": nil, "name": .string(emoji)],
                    ]
                }
            )
        }
        return .object(object)
    }

    func json(_ channel: EmulatedChannel) -> JSON {
        channel.json(guildID: guild(of: channel))
    }

    // MARK: Lookups shared by the REST routes

    static func liveThread(_ id: Snowflake, in state: State) throws(DiscordFailure) -> EmulatedChannel {
        guard let channel = state.channels[id] else { throw .unknownChannel }
        return channel
    }
}
