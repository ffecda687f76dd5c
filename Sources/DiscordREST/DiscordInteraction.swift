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

/// An `INTERACTION_CREATE`: a member ran a command (type 2), is typing one of its options (type
/// 4, autocomplete), clicked a button of a message (type 3) or submitted a modal (type 5). The
/// token answers it; it is a credential and never printed.
///
/// The daemon forwards it to the server in this type's own encoding (camelCase keys), which reads
/// Discord's snake_case shape through `convertFromSnakeCase` as well: `data` is read by `type`.
public struct DiscordInteraction: Sendable, Codable, Hashable, CustomStringConvertible {
    public static let command = 2
    public static let component = 3
    public static let autocomplete = 4
    public static let modalSubmit = 5

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

    /// What was clicked (type 3): the component's `custom_id` and type (2 a button).
    public struct ComponentData: Sendable, Codable, Hashable {
        public var customId: String
        public var componentType: Int
        /// A select menu's chosen values.
        public var values: [String]?

        public init(customId: String, componentType: Int = 2, values: [String]? = nil) {
            (self.customId, self.componentType, self.values) = (customId, componentType, values)
        }
    }

    /// A submitted modal (type 5): its `custom_id` and each text input's value by its `custom_id`,
    /// read from action rows and labels alike.
    public struct ModalSubmitData: Sendable, Codable, Hashable {
        public var customId: String
        public var fields: [String: String]

        public init(customId: String, fields: [String: String]) {
            (self.customId, self.fields) = (customId, fields)
        }

        private enum CodingKeys: String, CodingKey { case customId, components }

        /// A row (type 1, `components`) or a label (type 18, `component`) around inputs.
        private struct Node: Codable {
            var type: Int
            var customId: String?
            var value: String?
            var component: Box?
            var components: [Node]?

            var inputs: [(String, String)] {
                var found: [(String, String)] = []
                if let customId, let value { found.append((customId, value)) }
                for child in (components ?? []) + (component.map { [$0.node] } ?? []) { found += child.inputs }
                return found
            }
        }

        private final class Box: Codable {
            let node: Node
            init(_ node: Node) { self.node = node }
            required init(from decoder: any Decoder) throws { node = try Node(from: decoder) }
            func encode(to encoder: any Encoder) throws { try node.encode(to: encoder) }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            customId = try container.decode(String.self, forKey: .customId)
            let nodes = try container.decodeIfPresent([Node].self, forKey: .components) ?? []
            fields = Dictionary(nodes.flatMap(\.inputs), uniquingKeysWith: { first, _ in first })
        }

        /// As Discord sends it: one action row per input, in `custom_id` order.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(customId, forKey: .customId)
            let rows = fields.sorted { $0.key < $1.key }.map { field in
                Node(type: 1, components: [Node(type: 4, customId: field.key, value: field.value)])
            }
            try container.encode(rows, forKey: .components)
        }
    }

    /// The message a component belongs to (and a modal opened from one).
    public struct MessageRef: Sendable, Codable, Hashable {
        public var id: String
        public var channelId: String

        public init(id: String, channelId: String) { (self.id, self.channelId) = (id, channelId) }
    }

    public var id: String
    public var applicationId: String
    public var type: Int
    public var token: String
    public var guildId: String?
    public var channelId: String?
    public var member: Member?
    /// A command's data (types 2 and 4).
    public var data: CommandData?
    /// A click's data (type 3).
    public var component: ComponentData?
    /// A modal's submitted values (type 5).
    public var modal: ModalSubmitData?
    /// For types 3 and 5 (a modal opened from a component): the message clicked.
    public var message: MessageRef?
    /// The member's language in Discord (`en-US`, `de`, …), and the guild's.
    public var locale: String?
    public var guildLocale: String?

    public init(
        id: String, applicationId: String, type: Int, token: String, guildId: String?, channelId: String?, member: Member?, data: CommandData?,
        component: ComponentData? = nil, modal: ModalSubmitData? = nil, message: MessageRef? = nil, locale: String? = nil,
        guildLocale: String? = nil
    ) {
        (self.id, self.applicationId, self.type, self.token) = (id, applicationId, type, token)
        (self.guildId, self.channelId, self.member, self.data) = (guildId, channelId, member, data)
        (self.component, self.modal, self.message, self.locale, self.guildLocale) = (component, modal, message, locale, guildLocale)
    }

    private enum CodingKeys: String, CodingKey {
        case id, applicationId, type, token, guildId, channelId, member, data, message, locale, guildLocale
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        applicationId = try container.decode(String.self, forKey: .applicationId)
        type = try container.decode(Int.self, forKey: .type)
        token = try container.decode(String.self, forKey: .token)
        guildId = try container.decodeIfPresent(String.self, forKey: .guildId)
        channelId = try container.decodeIfPresent(String.self, forKey: .channelId)
        member = try container.decodeIfPresent(Member.self, forKey: .member)
        message = try container.decodeIfPresent(MessageRef.self, forKey: .message)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        guildLocale = try container.decodeIfPresent(String.self, forKey: .guildLocale)
        switch type {
        case Self.component: component = try container.decodeIfPresent(ComponentData.self, forKey: .data)
        case Self.modalSubmit: modal = try container.decodeIfPresent(ModalSubmitData.self, forKey: .data)
        default: data = try container.decodeIfPresent(CommandData.self, forKey: .data)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(applicationId, forKey: .applicationId)
        try container.encode(type, forKey: .type)
        try container.encode(token, forKey: .token)
        try container.encodeIfPresent(guildId, forKey: .guildId)
        try container.encodeIfPresent(channelId, forKey: .channelId)
        try container.encodeIfPresent(member, forKey: .member)
        try container.encodeIfPresent(message, forKey: .message)
        try container.encodeIfPresent(locale, forKey: .locale)
        try container.encodeIfPresent(guildLocale, forKey: .guildLocale)
        switch type {
        case Self.component: try container.encodeIfPresent(component, forKey: .data)
        case Self.modalSubmit: try container.encodeIfPresent(modal, forKey: .data)
        default: try container.encodeIfPresent(data, forKey: .data)
        }
    }

    public var description: String {
        "interaction \(id) (\(data?.name ?? component?.customId ?? modal?.customId ?? "?"), type \(type))"
    }
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
        var components: [DiscordActionRow]?

        enum CodingKeys: String, CodingKey { case content, flags, choices, allowedMentions = "allowed_mentions", components }
    }

    var type: Int
    var data: Payload?
    var modal: DiscordModal?

    init(type: Int, data: Payload? = nil, modal: DiscordModal? = nil) {
        (self.type, self.data, self.modal) = (type, data, modal)
    }

    private enum CodingKeys: String, CodingKey { case type, data }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        if let modal {
            try container.encode(modal, forKey: .data)
        } else {
            try container.encodeIfPresent(data, forKey: .data)
        }
    }

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

    /// A click (or a submit of a modal opened from one) is taken; nothing changes yet. Editing
    /// `@original` afterwards edits the message clicked.
    public static let deferredUpdate = Self(type: 6)

    /// Changes the message clicked, at once: its text, its buttons (empty removes them), or both.
    public static func update(content: String? = nil, components: [DiscordActionRow]? = nil) -> Self {
        Self(type: 7, data: Payload(content: content, allowedMentions: DiscordAllowedMentions.none, components: components))
    }

    /// Opens a form for the member (never in answer to a modal's submit).
    public static func modal(_ modal: DiscordModal) -> Self {
        Self(type: 9, modal: modal)
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

/// `GET /oauth2/applications/@me`: only the id is needed.
public struct DiscordApplication: Sendable, Codable, Hashable {
    public var id: String
    /// The application's flags: the privileged intents switched on in the Developer Portal among them.
    public var flags: Int?

    /// GATEWAY_MESSAGE_CONTENT (a verified app) or GATEWAY_MESSAGE_CONTENT_LIMITED (under 100 servers).
    public var hasMessageContentIntent: Bool { (flags ?? 0) & (1 << 18 | 1 << 19) != 0 }
}
