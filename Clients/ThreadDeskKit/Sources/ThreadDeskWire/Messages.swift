/// Who wrote a message, from the app user's point of view. Authors added later decode as
/// `support`: whoever is not the user speaks for the developer.
public enum MessageAuthor: String, Sendable, Codable, Hashable, CaseIterable {
    /// The app user: ThreadDesk posts on their behalf.
    case user
    /// Anyone else in the thread: the developer or their support team.
    case support
    /// An automatic answer written from the developer's help articles while support was away.
    case assistant

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = MessageAuthor(rawValue: text) ?? .support
    }
}

/// A message of the conversation as the app sees it (`GET /v1/messages`, the answer to a send,
/// and the `message.created` / `message.updated` events).
public struct SupportMessage: Sendable, Codable, Hashable, Identifiable {
    /// A file attached to a message.
    public struct Attachment: Sendable, Codable, Hashable, Identifiable {
        public var id: String
        public var filename: String
        public var size: Int
        public var contentType: String?
        /// Where the app fetches the bytes: ThreadDesk's own `/v1/attachments/{id}`, with the
        /// bearer token (a path relative to the server), never Discord's CDN.
        public var url: String
        /// Pixel size, for images.
        public var width: Int?
        public var height: Int?

        public init(
            id: String, filename: String, size: Int, contentType: String?, url: String, width: Int? = nil, height: Int? = nil
        ) {
            self.id = id
            self.filename = filename
            self.size = size
            self.contentType = contentType
            self.url = url
            self.width = width
            self.height = height
        }
    }

    /// The message's id (a Discord snowflake, as digits). Ids grow with time.
    public var id: String
    public var author: MessageAuthor
    /// The support agent's display name; absent for the user's own messages.
    public var authorName: String?
    public var content: String
    public var attachments: [Attachment]
    /// ISO 8601.
    public var createdAt: String
    /// ISO 8601; set once the message was edited.
    public var editedAt: String?
    /// Only in the answer to a send whose text needed several Discord posts: their ids, in order.
    public var partIds: [String]?
    /// The message this one answers, when it is a reply.
    public var replyTo: String?
    /// Where the message stands on its way to support: `queued` (ThreadDesk keeps it, Discord does
    /// not have it yet), `sent`, or `failed` (Discord refused it for good, `deliveryError` says why).
    /// Support's messages are always `sent`; absent only from servers before the outbox (sent).
    public var delivery: MessageDelivery?
    /// Why a `failed` message was refused.
    public var deliveryError: DeliveryError?

    public init(
        id: String, author: MessageAuthor, authorName: String? = nil, content: String, attachments: [Attachment] = [],
        createdAt: String, editedAt: String? = nil, partIds: [String]? = nil, replyTo: String? = nil,
        delivery: MessageDelivery? = .sent, deliveryError: DeliveryError? = nil
    ) {
        self.delivery = delivery
        self.deliveryError = deliveryError
        self.id = id
        self.author = author
        self.authorName = authorName
        self.content = content
        self.attachments = attachments
        self.createdAt = createdAt
        self.editedAt = editedAt
        self.partIds = partIds
        self.replyTo = replyTo
    }
}

/// Where a message stands on its way to support (`SupportMessage.delivery`).
public enum MessageDelivery: String, Sendable, Codable, Hashable, CaseIterable {
    /// Accepted and kept by ThreadDesk; Discord does not have it yet.
    case queued
    /// In the support thread.
    case sent
    /// Discord refused it for good: the user may edit it (to send again) or delete it.
    case failed
}

/// Why Discord refused a message for good: Discord's error code (or ThreadDesk's name for the
/// reason) and what it said.
public struct DeliveryError: Sendable, Codable, Hashable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// `GET /v1/messages`: a page of the conversation, oldest first.
public struct MessagePage: Sendable, Codable, Hashable {
    public var messages: [SupportMessage]
    /// More messages lie beyond this page in the direction asked for.
    public var hasMore: Bool
    /// A closed conversation waits for the user's rating (`POST /v1/rating`); absent otherwise.
    public var ratingRequest: RatingRequest?

    public init(messages: [SupportMessage], hasMore: Bool, ratingRequest: RatingRequest? = nil) {
        self.messages = messages
        self.hasMore = hasMore
        self.ratingRequest = ratingRequest
    }
}

/// The JSON body of `POST /v1/messages` (text only) and of `PATCH /v1/messages/{id}`.
public struct MessageRequest: Sendable, Codable, Hashable {
    public var content: String
    /// The curated answer (`GET /v1/suggestions`) the app showed right before this message: the
    /// thread gets a note naming it, so support knows what the user already read.
    public var suggestionId: String?

    public init(content: String, suggestionId: String? = nil) {
        self.content = content
        self.suggestionId = suggestionId
    }
}

/// The `multipart/form-data` field names of `POST /v1/messages` with files.
public enum MessageForm {
    /// The text part (optional when files are attached).
    public static let content = "content"
    /// The name the SDK gives each file part (any part with a filename is a file; up to
    /// `ATTACHMENT_MAX_FILES`, 10 by default).
    public static let file = "files"
}
