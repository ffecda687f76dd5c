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

    /// Every event's `type` on the wire: the decoder takes exactly these (the document lists them).
    public enum WireType: String, CaseIterable, Sendable {
        case messageCreated = "message.created"
        case messageUpdated = "message.updated"
        case messageChanged = "message.changed"
        case messageDeleted = "message.deleted"
        case messagesDeleted = "messages.deleted"
        case threadUpdated = "thread.updated"
        case threadDeleted = "thread.deleted"
        case typing = "typing"
        case interaction = "interaction"
        case gap = "gap"
        case alive = "alive"
        case faqPost = "faq.post"
        case faqStarter = "faq.starter"
        case faqStarterChanged = "faq.starter.changed"
        case faqPostDeleted = "faq.post.deleted"
        case faqAccessChanged = "faq.access.changed"
    }

    public struct UnknownType: Error { public let type: String }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        func put(_ type: WireType) throws { try container.encode(type.rawValue, forKey: Key("type")) }
        switch self {
        case .messageCreated(let message):
            try put(.messageCreated)
            try container.encode(message, forKey: Key("message"))
        case .messageUpdated(let message):
            try put(.messageUpdated)
            try container.encode(message, forKey: Key("message"))
        case .messageChanged(let channel, let message):
            try put(.messageChanged)
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(message, forKey: Key("messageId"))
        case .messageDeleted(let channel, let message):
            try put(.messageDeleted)
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(message, forKey: Key("messageId"))
        case .messagesDeleted(let channel, let messages):
            try put(.messagesDeleted)
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(messages, forKey: Key("messageIds"))
        case .threadUpdated(let thread, let archived, let locked, let tags):
            try put(.threadUpdated)
            try container.encode(thread, forKey: Key("threadId"))
            try container.encode(archived, forKey: Key("archived"))
            try container.encode(locked, forKey: Key("locked"))
            try container.encodeIfPresent(tags, forKey: Key("appliedTags"))
        case .threadDeleted(let thread):
            try put(.threadDeleted)
            try container.encode(thread, forKey: Key("threadId"))
        case .typing(let channel, let user):
            try put(.typing)
            try container.encode(channel, forKey: Key("channelId"))
            try container.encode(user, forKey: Key("userId"))
        case .interaction(let interaction):
            try put(.interaction)
            try container.encode(interaction, forKey: Key("interaction"))
        case .gap:
            try put(.gap)
        case .alive:
            try put(.alive)
        case .faqPost(let thread, let title, let tags):
            try put(.faqPost)
            try container.encode(thread, forKey: Key("threadId"))
            try container.encode(title, forKey: Key("title"))
            try container.encode(tags, forKey: Key("tagIds"))
        case .faqStarter(let message):
            try put(.faqStarter)
            try container.encode(message, forKey: Key("message"))
        case .faqStarterChanged(let thread):
            try put(.faqStarterChanged)
            try container.encode(thread, forKey: Key("threadId"))
        case .faqPostDeleted(let thread):
            try put(.faqPostDeleted)
            try container.encode(thread, forKey: Key("threadId"))
        case .faqAccessChanged:
            try put(.faqAccessChanged)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard let raw = try container.decodeIfPresent(String.self, forKey: Key("type")) else {
            self = try Self.legacy(container)
            return
        }
        guard let type = WireType(rawValue: raw) else { throw UnknownType(type: raw) }
        func text(_ key: String) throws -> String { try container.decode(String.self, forKey: Key(key)) }
        switch type {
        case .messageCreated: self = .messageCreated(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case .messageUpdated: self = .messageUpdated(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case .messageChanged: self = .messageChanged(channelID: try text("channelId"), messageID: try text("messageId"))
        case .messageDeleted: self = .messageDeleted(channelID: try text("channelId"), messageID: try text("messageId"))
        case .messagesDeleted:
            self = .messagesDeleted(channelID: try text("channelId"), messageIDs: try container.decode([String].self, forKey: Key("messageIds")))
        case .threadUpdated:
            self = .threadUpdated(
                threadID: try text("threadId"), archived: try container.decode(Bool.self, forKey: Key("archived")),
                locked: try container.decode(Bool.self, forKey: Key("locked")),
                appliedTags: try container.decodeIfPresent([String].self, forKey: Key("appliedTags")))
        case .threadDeleted: self = .threadDeleted(threadID: try text("threadId"))
        case .typing: self = .typing(channelID: try text("channelId"), userID: try text("userId"))
        case .interaction: self = .interaction(try container.decode(DiscordInteraction.self, forKey: Key("interaction")))
        case .gap: self = .gap
        case .alive: self = .alive
        case .faqPost:
            self = .faqPost(
                threadID: try text("threadId"), title: try text("title"), tagIDs: try container.decode([String].self, forKey: Key("tagIds")))
        case .faqStarter: self = .faqStarter(try container.decode(DiscordMessage.self, forKey: Key("message")))
        case .faqStarterChanged: self = .faqStarterChanged(threadID: try text("threadId"))
        case .faqPostDeleted: self = .faqPostDeleted(threadID: try text("threadId"))
        case .faqAccessChanged: self = .faqAccessChanged
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
