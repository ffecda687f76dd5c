import DiscordREST
import ThreadDeskCore
import ThreadDeskStore

/// A message as the widget sees it.
public struct APIMessage: Sendable, Codable, Hashable {
    public struct Attachment: Sendable, Codable, Hashable {
        public var id: String
        public var filename: String
        public var size: Int
        public var contentType: String?
        /// Where the app fetches the bytes: ThreadDesk's own `/v1/attachments/{id}` (with the bearer
        /// token), never Discord's CDN, whose signed URLs expire.
        public var url: String
        public var width: Int?
        public var height: Int?
    }

    public var id: String
    public var author: MessageAuthor
    /// The support agent's display name; absent for the user's own messages.
    public var authorName: String?
    public var content: String
    public var attachments: [Attachment]
    public var createdAt: String
    public var editedAt: String?
    /// Only in the answer to a send whose text Discord needed in several posts: their ids, in order.
    public var partIds: [String]?

    public var replyTo: String?

    init(_ message: MirroredMessage) {
        id = message.id.description
        author = message.author
        authorName = message.authorName
        content = message.content
        attachments = message.attachments.map {
            Attachment(
                id: $0.id.description, filename: $0.filename, size: $0.size, contentType: $0.contentType,
                url: Self.attachmentPath($0.id.description), width: $0.width, height: $0.height)
        }
        createdAt = message.createdAt
        editedAt = message.editedAt
        replyTo = message.replyTo?.description
    }

    init(_ message: DiscordMessage, author: MessageAuthor) {
        id = message.id
        self.author = author
        authorName = author == .support ? (message.author.globalName ?? message.author.username) : nil
        content = author == .user ? NoteMarkers.userText(posted: message.content) : message.content
        attachments = message.attachments.map {
            Attachment(
                id: $0.id, filename: $0.filename, size: $0.size, contentType: $0.contentType, url: Self.attachmentPath($0.id),
                width: $0.width, height: $0.height)
        }
        createdAt = message.timestamp
        editedAt = message.editedTimestamp
    }
}

extension APIMessage {
    static func attachmentPath(_ id: String) -> String { "/v1/attachments/\(id)" }
}

/// `GET /v1/messages`.
public struct APIMessagePage: Sendable, Codable, Hashable {
    public var messages: [APIMessage]
    public var hasMore: Bool
}

