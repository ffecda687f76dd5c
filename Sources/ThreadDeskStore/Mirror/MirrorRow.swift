import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskWire

/// A mirrored message as the SQL stores keep it: one row, attachments as JSON text, the push
/// state in three columns so due pushes can be found by index.
struct MirrorRow: Sendable, Hashable {
    static let columns = """
        id, thread_id, author, author_id, author_username, author_name, type, content, attachments, reply_to, created_at,
        edited_at, visible, deleted, part_of, push_state, push_attempts, push_next_at, event_seq, shown_seq, delivery, delivery_error
        """

    var id: Int64
    var threadID: Int64
    var author: String
    var authorID: Int64?
    var authorUsername: String
    var authorName: String?
    var type: Int
    var content: String
    var attachments: String
    var replyTo: Int64?
    var createdAt: String
    var editedAt: String?
    var visible: Bool
    var deleted: Bool
    var partOf: Int64?
    var pushState: String
    var pushAttempts: Int
    /// Seconds since 1970.
    var pushNextAt: Double?
    var eventSeq: Int64
    var shownSeq: Int64
    var delivery: String
    /// JSON of the `DeliveryError`, for a failed message.
    var deliveryError: String?

    init(_ message: MirroredMessage) {
        id = Int64(bitPattern: message.id.rawValue)
        threadID = Int64(bitPattern: message.threadID.rawValue)
        author = message.author.rawValue
        authorID = message.authorID.map { Int64(bitPattern: $0.rawValue) }
        authorUsername = message.authorUsername
        authorName = message.authorName
        type = message.type
        content = message.content
        attachments = RecordJSON.encode(message.attachments) ?? "[]"
        replyTo = message.replyTo.map { Int64(bitPattern: $0.rawValue) }
        createdAt = message.createdAt
        editedAt = message.editedAt
        visible = message.visible
        deleted = message.deleted
        partOf = message.partOf.map { Int64(bitPattern: $0.rawValue) }
        switch message.push {
        case .none: (pushState, pushAttempts, pushNextAt) = ("none", 0, nil)
        case .pending(let attempts, let next): (pushState, pushAttempts, pushNextAt) = ("pending", attempts, next.timeIntervalSince1970)
        case .sent: (pushState, pushAttempts, pushNextAt) = ("sent", 0, nil)
        case .abandoned: (pushState, pushAttempts, pushNextAt) = ("abandoned", 0, nil)
        }
        (eventSeq, shownSeq) = (message.eventSeq, message.shownSeq)
        delivery = message.delivery.rawValue
        deliveryError = message.deliveryError.flatMap { RecordJSON.encode($0) }
    }

    init(
        id: Int64, threadID: Int64, author: String, authorID: Int64?, authorUsername: String, authorName: String?, type: Int,
        content: String, attachments: String, replyTo: Int64?, createdAt: String, editedAt: String?, visible: Bool, deleted: Bool,
        partOf: Int64?, pushState: String, pushAttempts: Int, pushNextAt: Double?, eventSeq: Int64, shownSeq: Int64, delivery: String,
        deliveryError: String?
    ) {
        (self.delivery, self.deliveryError) = (delivery, deliveryError)
        (self.id, self.threadID, self.author, self.authorID, self.authorUsername, self.authorName) =
            (id, threadID, author, authorID, authorUsername, authorName)
        (self.type, self.content, self.attachments, self.replyTo, self.createdAt, self.editedAt) =
            (type, content, attachments, replyTo, createdAt, editedAt)
        (self.visible, self.deleted, self.partOf, self.pushState, self.pushAttempts, self.pushNextAt) =
            (visible, deleted, partOf, pushState, pushAttempts, pushNextAt)
        (self.eventSeq, self.shownSeq) = (eventSeq, shownSeq)
    }

    var message: MirroredMessage {
        let push: PushState =
            switch pushState {
            case "pending": .pending(attempts: pushAttempts, nextAttempt: Date(timeIntervalSince1970: pushNextAt ?? 0))
            case "sent": .sent
            case "abandoned": .abandoned
            default: .none
            }
        var message = MirroredMessage(
            id: Snowflake(UInt64(bitPattern: id)), threadID: Snowflake(UInt64(bitPattern: threadID)),
            author: MessageAuthor(rawValue: author) ?? .support, authorID: authorID.map { Snowflake(UInt64(bitPattern: $0)) },
            authorUsername: authorUsername, authorName: authorName, type: type, content: content,
            attachments: RecordJSON.decode(attachments) ?? [], replyTo: replyTo.map { Snowflake(UInt64(bitPattern: $0)) },
            createdAt: createdAt, editedAt: editedAt, visible: visible, deleted: deleted,
            partOf: partOf.map { Snowflake(UInt64(bitPattern: $0)) }, push: push)
        (message.eventSeq, message.shownSeq) = (eventSeq, shownSeq)
        message.delivery = MessageDelivery(rawValue: delivery) ?? .sent
        message.deliveryError = RecordJSON.decode(deliveryError)
        return message
    }
}

extension Snowflake {
    /// As a signed 64-bit column (ids stay below 2^63 until 2084).
    var column: Int64 { Int64(bitPattern: rawValue) }

    init(column: Int64) { self.init(UInt64(bitPattern: column)) }
}
