import Foundation
import NIOCore
import NIOFoundationCompat

public struct DiscordUser: Sendable, Codable, Hashable {
    public var id: String
    public var username: String
    public var globalName: String?
    public var bot: Bool?

    public var isBot: Bool { bot ?? false }
}

public struct DiscordAttachment: Sendable, Codable, Hashable {
    public var id: String
    public var filename: String
    public var size: Int
    public var url: String
    public var proxyUrl: String
    public var contentType: String?
    /// Images and videos only.
    public var width: Int?
    public var height: Int?
}

public struct DiscordMessageReference: Sendable, Codable, Hashable {
    public var messageId: String?
    public var channelId: String?

    public init(messageId: String?, channelId: String? = nil) {
        self.messageId = messageId
        self.channelId = channelId
    }
}

/// Discord accepts and echoes nonces as strings or integers.
public enum DiscordNonce: Sendable, Codable, Hashable {
    case string(String)
    case integer(Int64)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        }
    }
}

public struct DiscordMessage: Sendable, Codable, Hashable {
    public var id: String
    public var channelId: String
    public var author: DiscordUser
    public var content: String
    public var timestamp: String
    public var editedTimestamp: String?
    public var type: Int
    public var attachments: [DiscordAttachment]
    public var mentionEveryone: Bool
    public var mentions: [DiscordUser]
    public var nonce: DiscordNonce?
    public var messageReference: DiscordMessageReference?
    /// Set when a webhook posted it (its author is then the webhook, no member).
    public var webhookId: String?
    /// The application whose webhook posted it, or whose interaction it answers.
    public var applicationId: String?
    /// The author as a guild member (their roles): on the gateway's MESSAGE_CREATE and
    /// MESSAGE_UPDATE in a guild, never in REST's message objects.
    public var member: DiscordGuildMember?
}

public struct DiscordThreadMetadata: Sendable, Codable, Hashable {
    public var archived: Bool
    public var locked: Bool
    public var autoArchiveDuration: Int
    public var archiveTimestamp: String?
}

public struct DiscordForumTag: Sendable, Codable, Hashable {
    public var id: String
    public var name: String
    /// Only members who may manage threads apply it.
    public var moderated: Bool?
}

/// A forum tag as `PATCH /channels/{forum}` takes it: an existing tag by its id (kept as it is),
/// or a new one (no id; Discord gives it one).
public struct DiscordForumTagEdit: Sendable, Encodable, Hashable {
    public var id: String?
    public var name: String
    public var moderated: Bool

    public init(id: String? = nil, name: String, moderated: Bool = false) {
        self.id = id
        self.name = name
        self.moderated = moderated
    }
}

public struct DiscordChannel: Sendable, Codable, Hashable {
    public var id: String
    public var type: Int
    public var guildId: String?
    public var parentId: String?
    public var name: String?
    public var ownerId: String?
    public var lastMessageId: String?
    public var flags: Int?
    public var threadMetadata: DiscordThreadMetadata?
    public var appliedTags: [String]?
    public var availableTags: [DiscordForumTag]?
    public var messageCount: Int?
    /// Guild channels only: who may do what here beyond the guild's roles.
    public var permissionOverwrites: [DiscordPermissionOverwrite]?

    /// Forum flag 1 << 4: posts must carry a tag.
    public var requiresTag: Bool { (flags ?? 0) & 16 != 0 }
}

/// A forum post just created: the thread and its starter message (whose id is the thread's).
public struct DiscordForumThread: Sendable, Hashable {
    public var channel: DiscordChannel
    public var message: DiscordMessage
}

extension DiscordForumThread: Decodable {
    private enum CodingKeys: String, CodingKey { case message }

    public init(from decoder: any Decoder) throws {
        channel = try DiscordChannel(from: decoder)
        message = try decoder.container(keyedBy: CodingKeys.self).decode(DiscordMessage.self, forKey: .message)
    }
}

public struct DiscordGatewayBot: Sendable, Codable, Hashable {
    public struct SessionStartLimit: Sendable, Codable, Hashable {
        public var total: Int
        public var remaining: Int
        public var resetAfter: Int
        public var maxConcurrency: Int
    }

    public var url: String
    public var shards: Int
    public var sessionStartLimit: SessionStartLimit
}

public struct DiscordActiveThreads: Sendable, Codable, Hashable {
    public var threads: [DiscordChannel]
}

public struct DiscordArchivedThreads: Sendable, Codable, Hashable {
    public var threads: [DiscordChannel]
    public var hasMore: Bool
}

/// Who a message may ping. ThreadDesk posts user text with `.none`.
public struct DiscordAllowedMentions: Sendable, Codable, Hashable {
    public var parse: [String]
    public var users: [String]?
    /// Roles that may be pinged (their ids), without `roles` in `parse`.
    public var roles: [String]?

    public init(parse: [String], users: [String]? = nil, roles: [String]? = nil) {
        self.parse = parse
        self.users = users
        self.roles = roles
    }

    /// Pings only `role` (the desk's), nobody else.
    public static func only(role: String) -> DiscordAllowedMentions { DiscordAllowedMentions(parse: [], roles: [role]) }

    public static let none = DiscordAllowedMentions(parse: [])
}

/// A file to upload with a message. Its bytes are a `ByteBuffer` so an upload can go out as a
/// slice of the request it came in (no copy).
public struct DiscordFile: Sendable, Hashable {
    public var filename: String
    public var contentType: String
    public var bytes: ByteBuffer

    public init(filename: String, contentType: String = "application/octet-stream", bytes: ByteBuffer) {
        self.filename = filename
        self.contentType = contentType
        self.bytes = bytes
    }

    public init(filename: String, contentType: String = "application/octet-stream", data: Data) {
        self.init(filename: filename, contentType: contentType, bytes: ByteBuffer(data: data))
    }
}

/// The body of a new message: for posts into a thread and for a forum thread's starter post.
public struct DiscordMessageCreate: Sendable, Hashable {
    public var content: String
    /// With `enforceNonce`, Discord answers a repeated nonce with the earlier message instead of posting again.
    public var nonce: String?
    public var enforceNonce: Bool
    public var allowedMentions: DiscordAllowedMentions
    public var reference: DiscordMessageReference?
    public var files: [DiscordFile]
    /// Rows of buttons under the message (only an application's messages carry them).
    public var components: [DiscordActionRow]

    public init(
        content: String, nonce: String? = nil, enforceNonce: Bool = true, allowedMentions: DiscordAllowedMentions = .none,
        reference: DiscordMessageReference? = nil, files: [DiscordFile] = [], components: [DiscordActionRow] = []
    ) {
        self.content = content
        self.nonce = nonce
        self.enforceNonce = enforceNonce && nonce != nil
        self.allowedMentions = allowedMentions
        self.reference = reference
        self.files = files
        self.components = components
    }
}

extension DiscordMessageCreate: Encodable {
    /// Points at the multipart part `files[id]`; Discord's schema types the id as a snowflake string.
    private struct AttachmentSlot: Encodable {
        var id: String
        var filename: String
    }

    private enum CodingKeys: String, CodingKey {
        case content, nonce, enforceNonce = "enforce_nonce", allowedMentions = "allowed_mentions"
        case reference = "message_reference", attachments, components
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !content.isEmpty { try container.encode(content, forKey: .content) }
        try container.encodeIfPresent(nonce, forKey: .nonce)
        if enforceNonce { try container.encode(true, forKey: .enforceNonce) }
        try container.encode(allowedMentions, forKey: .allowedMentions)
        if let reference {
            var nested = container.nestedContainer(keyedBy: ReferenceKeys.self, forKey: .reference)
            try nested.encodeIfPresent(reference.messageId, forKey: .messageId)
        }
        if !files.isEmpty {
            let slots = files.enumerated().map { AttachmentSlot(id: String($0.offset), filename: $0.element.filename) }
            try container.encode(slots, forKey: .attachments)
        }
        if !components.isEmpty { try container.encode(components, forKey: .components) }
    }

    private enum ReferenceKeys: String, CodingKey { case messageId = "message_id" }
}

/// `POST /channels/{forum}/threads`.
public struct DiscordForumThreadCreate: Sendable, Hashable, Encodable {
    public var name: String
    public var autoArchiveDuration: Int
    public var appliedTags: [String]
    public var message: DiscordMessageCreate

    public init(name: String, autoArchiveDuration: Int = 10080, appliedTags: [String] = [], message: DiscordMessageCreate) {
        self.name = name
        self.autoArchiveDuration = autoArchiveDuration
        self.appliedTags = appliedTags
        self.message = message
    }

    private enum CodingKeys: String, CodingKey {
        case name, autoArchiveDuration = "auto_archive_duration", appliedTags = "applied_tags", message
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(autoArchiveDuration, forKey: .autoArchiveDuration)
        if !appliedTags.isEmpty { try container.encode(appliedTags, forKey: .appliedTags) }
        try container.encode(message, forKey: .message)
    }
}

/// `POST /attachments/refresh-urls`: a fresh signed CDN URL for each one given.
public struct DiscordRefreshedURL: Sendable, Codable, Hashable {
    public var original: String
    public var refreshed: String
}

struct DiscordRefreshURLsRequest: Encodable {
    var attachment_urls: [String]
}

struct DiscordRefreshURLsResponse: Decodable {
    var refreshedUrls: [DiscordRefreshedURL]
}
