import DiscordREST

/// The daemon → server contract (`POST /internal/gateway/events`), explicit so that daemon and
/// server can be upgraded one at a time: `{"version": 1, "events": [{"type": "message.created",
/// "message": {…}}, …]}`, every event an object with a `type`. The FAQ forum's events
/// (`faq.post`, `faq.starter`, `faq.starter.changed`, `faq.post.deleted`, `faq.access.changed`) came later: a server
/// from before them skips them, so the version stays 1. A server skips (and counts) events of
/// a type it does not know, so a newer daemon never makes it refuse a batch; it still reads the
/// shape Swift's synthesized `Codable` gave daemons before version 1.
public struct ForumEventBatch: Sendable, Codable {
    public static let currentVersion = 1

    public var version: Int
    public var events: [ForumEvent]

    public init(events: [ForumEvent]) {
        self.version = Self.currentVersion
        self.events = events
    }

    private enum CodingKeys: String, CodingKey { case version, events }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 0
        let lenient = try container.decode([Lenient].self, forKey: .events)
        events = lenient.compactMap(\.event)
        skipped = lenient.count - events.count
    }

    /// Events of this batch that were not understood (an unknown type, or a shape this server
    /// cannot read); not encoded.
    public private(set) var skipped = 0

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(events, forKey: .events)
    }

    private struct Lenient: Decodable {
        let event: ForumEvent?
        init(from decoder: any Decoder) throws { event = try? ForumEvent(from: decoder) }
    }
}

extension ForumEvent: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public struct UnknownType: Error { public let type: String }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        func put(_ type: String) throws { try container.encode(type, forKey: Key("type")) }
        switch self {
        case .messageCreated(let message):
            try put("message.created")
            try container.encode(message, forKey: Key("message"))
        case .messageUpdated(let message):
            try put("message.updated")
            try container.encode(message, forKey: Key("message"))
        case .messageChanged(let channel, let message):
            try put("message.changed")
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(message, forKey: Key("messageId"))
        case .messageDeleted(let channel, let message):
            try put("message.deleted")
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(message, forKey: Key("messageId"))
        case .messagesDeleted(let channel, let messages):
            try put("messages.deleted")
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(messages, forKey: Key("messageIds"))
        case .threadUpdated(let thread, let archived, let locked, let tags):
            try put("thread.updated")
            try container.encode(thread, forKey: Key("threadId"))
            try container.encode(archived, forKey: Key("archived"))
            try container.encode(locked, forKey: Key("locked"))
            try container.encodeIfPresent(tags, forKey: Key("appliedTags"))
        case .threadDeleted(let thread):
            try put("thread.deleted")
            try container.encode(thread, forKey: Key("threadId"))
        case .typing(let channel, let user):
            try put("typing")
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(user, forKey: Key("userId"))
        case .interaction(let interaction):
            try put("interaction")
            try container.encode(interaction, forKey: Key("interaction"))
        case .gap:
            try put("gap")
        case .alive:
            try put("alive")
        case .faqPost(let thread, let title, let tags):
            try put("faq.post")
            try container.encode(thread, forKey: Key("threadId"))
            try container.encode(title, forKey: Key("title"))
            try container.encode(tags, forKey: Key("tagIds"))
        case .faqStarter(let message):
            try put("faq.starter")
            try container.encode(message, forKey: Key("message"))
        case .faqStarterChanged(let thread):
            try put("faq.starter.changed")
            try container.encode(thread, forKey: Key("threadId"))
        case .faqPostDeleted(let thread):
            try put("faq.post.deleted")
            try container.encode(thread, forKey: Key("threadId"))
        case .faqAccessChanged:
            try put("faq.access.changed")
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard let type = try container.decodeIfPresent(String.self, forKey: Key("type")) else {
            self = try Self.legacy(container)
            return
        }
        func text(_ key: String) throws -> String { try container.decode(String.self, forKey: Key(key)) }
        switch type {
        case "message.created": self = .messageCreated(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case "message.updated": self = .messageUpdated(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case "message.changed": self = .messageChanged(channelID: try text("channelId"), messageID: try text("messageId"))
        case "message.deleted": self = .messageDeleted(channelID: try text("channelId"), messageID: try text("messageId"))
        case "messages.deleted":
            self = .messagesDeleted(channelID: try text("channelId"), messageIDs: try container.decode([String].self, forKey: Key("messageIds")))
        case "thread.updated":
            self = .threadUpdated(
                threadID: try text("threadId"), archived: try container.decode(Bool.self, forKey: Key("archived")),
                locked: try container.decode(Bool.self, forKey: Key("locked")),
                appliedTags: try container.decodeIfPresent([String].self, forKey: Key("appliedTags")))
        case "thread.deleted": self = .threadDeleted(threadID: try text("threadId"))
        case "typing": self = .typing(channelID: try text("channelId"), userID: try text("userId"))
        case "interaction": self = .interaction(try container.decode(DiscordInteraction.self, forKey: Key("interaction")))
        case "gap": self = .gap
        case "alive": self = .alive
        case "faq.post":
            self = .faqPost(
                threadID: try text("threadId"), title: try text("title"), tagIDs: try container.decode([String].self, forKey: Key("tagIds")))
        case "faq.starter": self = .faqStarter(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case "faq.starter.changed": self = .faqStarterChanged(threadID: try text("threadId"))
        case "faq.post.deleted": self = .faqPostDeleted(threadID: try text("threadId"))
        case "faq.access.changed": self = .faqAccessChanged
        default: throw UnknownType(type: type)
        }
    }

    /// Daemons before version 1 sent Swift's synthesized shape: `{"messageCreated": {"_0": …}}`.
    private static func legacy(_ container: KeyedDecodingContainer<Key>) throws -> ForumEvent {
        guard let name = container.allKeys.first?.stringValue else { throw UnknownType(type: "") }
        let fields = try? container.nestedContainer(keyedBy: Key.self, forKey: Key(name))
        func text(_ key: String) throws -> String {
            guard let fields else { throw UnknownType(type: name) }
            return try fields.decode(String.self, forKey: Key(key))
        }
        func message() throws -> DiscordMessage {
            guard let fields else { throw UnknownType(type: name) }
            return try fields.decode(DiscordMessage.self, forKey: Key("_0"))
        }
        switch name {
        case "messageCreated": return .messageCreated(try message())
        case "messageUpdated": return .messageUpdated(try message())
        case "messageChanged": return .messageChanged(channelID: try text("channelID"), messageID: try text("messageID"))
        case "messageDeleted": return .messageDeleted(channelID: try text("channelID"), messageID: try text("messageID"))
        case "messagesDeleted":
            guard let fields else { throw UnknownType(type: name) }
            return .messagesDeleted(channelID: try text("channelID"), messageIDs: try fields.decode([String].self, forKey: Key("messageIDs")))
        case "threadUpdated":
            guard let fields else { throw UnknownType(type: name) }
            return .threadUpdated(
                threadID: try text("threadID"), archived: try fields.decode(Bool.self, forKey: Key("archived")),
                locked: try fields.decode(Bool.self, forKey: Key("locked")))
        case "threadDeleted": return .threadDeleted(threadID: try text("threadID"))
        case "typing": return .typing(channelID: try text("channelID"), userID: try text("userID"))
        case "gap": return .gap
        case "alive": return .alive
        default: throw UnknownType(type: name)
        }
    }
}
