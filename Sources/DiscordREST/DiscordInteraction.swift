import Foundation

/// A slash command as ThreadDesk registers it (`PUT /applications/{id}/guilds/{id}/commands`).
public struct DiscordApplicationCommand: Sendable, Encodable, Hashable {
    public var type: Int
    public var name: String
    public var description: String
    public var options: [DiscordCommandOption]?
    /// A permission bitfield as a decimal string: members without it are not offered the command.
    public var defaultMemberPermissions: String?

    public init(name: String, description: String, options: [DiscordCommandOption] = [], defaultMemberPermissions: String? = nil) {
        self.type = 1
        self.name = name
        self.description = description
        self.options = options.isEmpty ? nil : options
        self.defaultMemberPermissions = defaultMemberPermissions
    }

    private enum CodingKeys: String, CodingKey {
        case type, name, description, options, defaultMemberPermissions = "default_member_permissions"
    }
}

public struct DiscordCommandOption: Sendable, Encodable, Hashable {
    public enum Kind: Int, Sendable, Encodable, Hashable {
        case subcommand = 1, string = 3, integer = 4, boolean = 5
    }

    public var type: Kind
    public var name: String
    public var description: String
    public var required: Bool?
    public var autocomplete: Bool?
    public var maxLength: Int?
    public var options: [DiscordCommandOption]?

    public init(
        _ type: Kind, name: String, description: String, required: Bool = false, autocomplete: Bool = false, maxLength: Int? = nil,
        options: [DiscordCommandOption] = []
    ) {
        self.type = type
        self.name = name
        self.description = description
        self.required = required ? true : nil
        self.autocomplete = autocomplete ? true : nil
        self.maxLength = maxLength
        self.options = options.isEmpty ? nil : options
    }

    private enum CodingKeys: String, CodingKey {
        case type, name, description, required, autocomplete, maxLength = "max_length", options
    }
}

/// An `INTERACTION_CREATE`: a member ran a command (type 2) or is typing one of its options
/// (type 4, autocomplete). The token answers it; it is a credential and never printed.
public struct DiscordInteraction: Sendable, Codable, Hashable, CustomStringConvertible {
    public static let command = 2
    public static let autocomplete = 4

    public struct Member: Sendable, Codable, Hashable {
        public var user: DiscordUser
        public var roles: [String]
        public var permissions: String?
        public var nick: String?

        public init(user: DiscordUser, roles: [String] = [], permissions: String? = nil, nick: String? = nil) {
            (self.user, self.roles, self.permissions, self.nick) = (user, roles, permissions, nick)
        }

        /// The name the guild shows for the member.
        public var displayName: String { nick ?? user.globalName ?? user.username }
    }

    public struct CommandData: Sendable, Codable, Hashable {
        public var id: String
        public var name: String
        public var options: [DiscordInteractionOption]?

        public init(id: String, name: String, options: [DiscordInteractionOption]? = nil) {
            (self.id, self.name, self.options) = (id, name, options)
        }
    }

    public var id: String
    public var applicationId: String
    public var type: Int
    public var token: String
    public var guildId: String?
    public var channelId: String?
    public var member: Member?
    public var data: CommandData?

    public init(
        id: String, applicationId: String, type: Int, token: String, guildId: String?, channelId: String?, member: Member?, data: CommandData?
    ) {
        (self.id, self.applicationId, self.type, self.token) = (id, applicationId, type, token)
        (self.guildId, self.channelId, self.member, self.data) = (guildId, channelId, member, data)
    }

    public var description: String { "interaction \(id) (\(data?.name ?? "?"), type \(type))" }
}

/// A filled-in option; a subcommand carries its own options.
public struct DiscordInteractionOption: Sendable, Codable, Hashable {
    public var name: String
    public var type: Int
    public var value: JSON?
    public var focused: Bool?
    public var options: [DiscordInteractionOption]?

    public init(name: String, type: Int, value: JSON? = nil, focused: Bool? = nil, options: [DiscordInteractionOption]? = nil) {
        (self.name, self.type, self.value, self.focused, self.options) = (name, type, value, focused, options)
    }

    /// The option's value as text (strings as they are, numbers and booleans spelled out).
    public var text: String? {
        switch value {
        case .string(let text)?: text
        case .bool(let flag)?: String(flag)
        case .number?, .integer?: value?.intValue.map(String.init) ?? value?.doubleValue.map { String($0) }
        default: nil
        }
    }
}

/// The answer to an interaction (`POST /interactions/{id}/{token}/callback`).
public struct DiscordInteractionResponse: Sendable, Encodable, Hashable {
    public struct Choice: Sendable, Encodable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { (self.name, self.value) = (name, value) }
    }

    struct Payload: Sendable, Encodable, Hashable {
        var content: String?
        var flags: Int?
        var choices: [Choice]?
        var allowedMentions: DiscordAllowedMentions?

        enum CodingKeys: String, CodingKey { case content, flags, choices, allowedMentions = "allowed_mentions" }
    }

    var type: Int
    var data: Payload?

    /// Flag 64: only the member who ran the command sees the answer.
    static let ephemeral = 64

    /// A message only the member who ran the command sees.
    public static func ephemeralMessage(_ content: String) -> Self {
        Self(type: 4, data: Payload(content: content, flags: ephemeral, allowedMentions: DiscordAllowedMentions.none))
    }

    /// "Thinking…", visible only to the member: the answer comes later by editing the original.
    public static let deferredEphemeral = Self(type: 5, data: Payload(flags: ephemeral))

    /// Autocomplete choices (Discord shows at most 25).
    public static func choices(_ choices: [Choice]) -> Self {
        Self(type: 8, data: Payload(choices: Array(choices.prefix(25))))
    }
}

/// A channel webhook. Its token is a credential and never printed.
public struct DiscordWebhook: Sendable, Codable, Hashable, CustomStringConvertible {
    public var id: String
    public var type: Int
    public var channelId: String?
    public var name: String?
    public var token: String?
    public var applicationId: String?

    public var description: String { "webhook \(id) (\(name ?? ""))" }
}

/// `POST /webhooks/{id}/{token}`: a message under a name of the caller's choosing.
public struct DiscordWebhookMessage: Sendable, Encodable, Hashable {
    public var content: String
    public var username: String?
    public var allowedMentions: DiscordAllowedMentions

    public init(content: String, username: String?, allowedMentions: DiscordAllowedMentions = .none) {
        (self.content, self.username, self.allowedMentions) = (content, username, allowedMentions)
    }

    private enum CodingKeys: String, CodingKey { case content, username, allowedMentions = "allowed_mentions" }
}

struct DiscordWebhookCreate: Encodable {
    var name: String
}

struct DiscordOriginalEdit: Encodable {
    var content: String
    var allowed_mentions: DiscordAllowedMentions
}

/// `GET /oauth2/applications/@me`: only the id is needed.
public struct DiscordApplication: Sendable, Codable, Hashable {
    public var id: String
    /// The application's flags: the privileged intents switched on in the Developer Portal among them.
    public var flags: Int?

    /// GATEWAY_MESSAGE_CONTENT (a verified app) or GATEWAY_MESSAGE_CONTENT_LIMITED (under 100 servers).
    public var hasMessageContentIntent: Bool { (flags ?? 0) & (1 << 18 | 1 << 19) != 0 }
}
