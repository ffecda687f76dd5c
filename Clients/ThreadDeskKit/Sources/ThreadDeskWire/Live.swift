/// The names of the server-sent events of `GET /v1/events`. Every event carries an `id` (its
/// stream position, for `Last-Event-ID`) and one line of JSON data.
public enum LiveEventName: String, Sendable, Hashable, CaseIterable {
    /// ``SupportMessage``: a new visible message (the user's own included).
    case messageCreated = "message.created"
    /// ``SupportMessage``: a visible message was edited.
    case messageUpdated = "message.updated"
    /// ``MessageDeleted``: a message is gone.
    case messageDeleted = "message.deleted"
    /// ``ReadMark``: the user's read mark moved (from another device, say).
    case read
    /// ``UnreadCount``: unread support messages. Every stream starts with one.
    case unread
    /// ``Typing``: support is typing.
    case typing
    /// ``StreamReset``: what was missed cannot be replayed; fetch the messages again.
    case reset
    /// ``RatingRequest``: support closed a conversation it answered; the app may ask the user
    /// for a rating (`POST /v1/rating`). Sent again to a stream that opens while it waits.
    case ratingRequested = "rating.requested"
}

/// Data of `message.deleted`.
public struct MessageDeleted: Sendable, Codable, Hashable {
    public var id: String
    public init(id: String) { self.id = id }
}

/// Data of `read`.
public struct ReadMark: Sendable, Codable, Hashable {
    public var messageId: String
    public init(messageId: String) { self.messageId = messageId }
}

/// Data of `unread`, and the answer to `GET /v1/unread` and `POST /v1/read`.
public struct ReadState: Sendable, Codable, Hashable {
    /// The newest message the user has read.
    public var lastReadMessageId: String?
    /// Visible support messages newer than `lastReadMessageId`.
    public var count: Int

    public init(lastReadMessageId: String?, count: Int) {
        self.lastReadMessageId = lastReadMessageId
        self.count = count
    }
}

/// Data of `unread`.
public struct UnreadCount: Sendable, Codable, Hashable {
    public var count: Int
    public init(count: Int) { self.count = count }
}

/// Data of `typing`.
public struct Typing: Sendable, Codable, Hashable {
    /// ISO 8601: the indicator holds until then unless a message or another `typing` comes.
    public var expiresAt: String
    public init(expiresAt: String) { self.expiresAt = expiresAt }
}

/// Data of `reset`.
public struct StreamReset: Sendable, Codable, Hashable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}

/// `POST /v1/read`.
public struct ReadRequest: Sendable, Codable, Hashable {
    public var messageId: String
    public init(messageId: String) { self.messageId = messageId }
}
