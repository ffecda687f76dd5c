import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskWire

/// One Discord message of a user's thread, as ThreadDesk last learned it.
public struct MirroredMessage: Sendable, Hashable, Codable {
    public struct Attachment: Sendable, Hashable, Codable {
        public var id: Snowflake
        public var filename: String
        public var size: Int
        public var contentType: String?
        public var url: String
        public var proxyURL: String
        public var width: Int?
        public var height: Int?

        public init(
            id: Snowflake, filename: String, size: Int, contentType: String?, url: String, proxyURL: String, width: Int? = nil,
            height: Int? = nil
        ) {
            self.id = id
            self.filename = filename
            self.size = size
            self.contentType = contentType
            self.url = url
            self.proxyURL = proxyURL
            self.width = width
            self.height = height
        }
    }

    public var id: Snowflake
    public var threadID: Snowflake
    public var author: MessageAuthor
    /// Discord's author, for the legacy wire shape; the agent's display name for `/v1`.
    public var authorID: Snowflake?
    public var authorUsername: String
    public var authorName: String?
    /// Discord's message type (0 default, 19 reply, …).
    public var type: Int
    /// As the user sees it: a user's own text is stored without the escaping it was posted with.
    public var content: String
    public var attachments: [Attachment]
    public var replyTo: Snowflake?
    public var createdAt: String
    public var editedAt: String?
    /// Whether the user may see it (not a note, not a system message, not empty).
    public var visible: Bool
    public var deleted: Bool
    /// The first part's id when ThreadDesk posted one send as several messages.
    public var partOf: Snowflake?
    public var push: PushState
    /// The live-event sequence number of the last change the user could see (0: none since events
    /// were numbered). Numbers come from one store-wide sequence, so they also order one user's changes.
    public var eventSeq: Int64 = 0
    /// The sequence number at which the user could first see it (0: before events were numbered,
    /// or never): a replay tells `message.created` from `message.updated` by it.
    public var shownSeq: Int64 = 0
    /// Where a user's message stands on its way to Discord: `queued` while the outbox keeps it
    /// (its id is ThreadDesk's, `MessageIDs`), `failed` when Discord refused it for good. Everything
    /// Discord told us of is `sent`.
    public var delivery: MessageDelivery = .sent
    /// Why a `failed` message was refused.
    public var deliveryError: DeliveryError?
    /// The nonce Discord echoed with a fact about it (an answer to our post, a gateway event);
    /// never stored: ingestion reads it before the merge.
    public var nonce: String?

    public init(
        id: Snowflake, threadID: Snowflake, author: MessageAuthor, authorID: Snowflake?, authorUsername: String, authorName: String?,
        type: Int, content: String, attachments: [Attachment], replyTo: Snowflake?, createdAt: String, editedAt: String?,
        visible: Bool, deleted: Bool = false, partOf: Snowflake? = nil, push: PushState = .none
    ) {
        self.id = id
        self.threadID = threadID
        self.author = author
        self.authorID = authorID
        self.authorUsername = authorUsername
        self.authorName = authorName
        self.type = type
        self.content = content
        self.attachments = attachments
        self.replyTo = replyTo
        self.createdAt = createdAt
        self.editedAt = editedAt
        self.visible = visible
        self.deleted = deleted
        self.partOf = partOf
        self.push = push
    }

    /// What is left of a message known only from its deletion.
    public static func tombstone(_ id: Snowflake, in thread: Snowflake) -> MirroredMessage {
        MirroredMessage(
            id: id, threadID: thread, author: .support, authorID: nil, authorUsername: "", authorName: nil, type: 0, content: "",
            attachments: [], replyTo: nil, createdAt: "", editedAt: nil, visible: false, deleted: true)
    }

    /// Whether the user's device should hear about it: anything shown that the user did not write
    /// (support's answers, and the assistant's once it speaks).
    public var isSupportReply: Bool { visible && !deleted && author != .user }

    /// Whether the user can see it now.
    public var isShown: Bool { visible && !deleted }
}

/// Where a message's push notification stands.
public enum PushState: Sendable, Hashable, Codable {
    /// Nothing to push (the user's own message, a note, an old message, no device).
    case none
    /// To be sent at `nextAttempt`, after `attempts` failed tries.
    case pending(attempts: Int, nextAttempt: Date)
    case sent
    /// Given up: refused by APNs, the device token gone, or too old to be worth sending.
    case abandoned

    public var isPending: Bool {
        if case .pending = self { return true }
        return false
    }
}

/// A fact Discord told us about one message: its current content, or its deletion.
public enum MirrorFact: Sendable, Hashable {
    case message(MirroredMessage)
    case deleted(Snowflake, thread: Snowflake)

    public var messageID: Snowflake {
        switch self {
        case .message(let message): message.id
        case .deleted(let id, _): id
        }
    }
}

/// What one fact changed.
public enum MirrorChange: Sendable, Hashable {
    /// Seen for the first time.
    case inserted(MirroredMessage)
    /// Content, attachments or visibility changed.
    case updated(MirroredMessage)
    case deleted(MirroredMessage)
}

extension MirroredMessage {
    /// The one merge rule of the mirror: applying facts in any order, any number of times, ends in
    /// the same state. A deletion is final (Discord never reuses an id); of two versions of a
    /// message the later edit wins, and an unedited version never replaces an edited one.
    /// Returns the new state (nil when nothing changes) and what changed.
    public static func merge(_ fact: MirrorFact, into existing: MirroredMessage?) -> (MirroredMessage, MirrorChange?)? {
        switch fact {
        case .deleted(let id, let thread):
            guard let current = existing else { return (.tombstone(id, in: thread), nil) }
            guard !current.deleted else { return nil }
            // Whatever was known, a deleted message is the same tombstone; only a push already sent stays on record.
            var tombstone = MirroredMessage.tombstone(id, in: thread)
            if current.push == .sent { tombstone.push = .sent }
            (tombstone.eventSeq, tombstone.shownSeq) = (current.eventSeq, current.shownSeq)
            return (tombstone, current.visible ? .deleted(current) : nil)
        case .message(var incoming):
            guard let current = existing else { return (incoming, .inserted(incoming)) }
            // A message the outbox kept, as Discord has it now: Discord's version wins (an edit made
            // while it waited was posted as its text).
            let arrived = current.delivery != .sent && incoming.delivery == .sent
            guard !current.deleted, arrived || isNewer(incoming.editedAt, than: current.editedAt) || sameVersion(incoming, current)
            else { return nil }
            incoming.push = current.push
            incoming.partOf = incoming.partOf ?? current.partOf
            (incoming.eventSeq, incoming.shownSeq) = (current.eventSeq, current.shownSeq)
            guard incoming != current else { return nil }
            let seen = incoming.visible || current.visible
            return (incoming, seen && incoming.differsForTheUser(from: current) ? .updated(incoming) : nil)
        }
    }

    /// Later edit times win; equal times are the same version (accepted, so a repeat is a no-op).
    static func isNewer(_ incoming: String?, than current: String?) -> Bool {
        guard let incoming else { return false }
        guard let current else { return true }
        return (EditTime.parse(incoming), incoming) > (EditTime.parse(current), current)
    }

    static func sameVersion(_ a: MirroredMessage, _ b: MirroredMessage) -> Bool { a.editedAt == b.editedAt }

    func differsForTheUser(from other: MirroredMessage) -> Bool {
        content != other.content || attachments != other.attachments || visible != other.visible || editedAt != other.editedAt
            || delivery != other.delivery || deliveryError != other.deliveryError
    }
}

/// Discord's ISO 8601 timestamps, with or without fractional seconds, as a number that orders them.
enum EditTime {
    static func parse(_ text: String) -> Double {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = withFraction.date(from: text) { return date.timeIntervalSince1970 }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return plain.date(from: text)?.timeIntervalSince1970 ?? 0
    }
}
