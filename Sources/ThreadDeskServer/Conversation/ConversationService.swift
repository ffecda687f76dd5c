import Prometheus
import Crypto
import DiscordREST
import Foundation
import Logging
import NIOCore
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// The user's side of the conversation: sending (text and files) and reading, from the mirror.
/// A send is accepted into the outbox (a committed transaction) and answered at once; Discord gets
/// it from `OutboxDelivery`.
struct ConversationService: Sendable {
    let users: UserSerializer
    let store: any UserStore
    let sync: MirrorSync
    let intake: OutboxIntake
    let metrics: ServerMetrics

    /// Accepts the user's text (and files) for their thread: kept in the outbox and the mirror
    /// (`queued`) in one commit, delivered to Discord afterwards. A retry with the same idempotency
    /// key answers what the first attempt answered and accepts nothing new. A user's first message
    /// charges the thread budget (and needs `mayStartThread`) here, when it is accepted.
    /// - Parameters:
    ///   - text: The user's text, split into Discord-sized parts when it is delivered.
    ///   - files: Files for the first part; `filesFingerprint` tells a retry's files apart.
    ///   - suggestionID: The curated answer the user saw before writing, noted for the agent.
    ///   - idempotencyKey: The client's key for this send.
    ///   - id: The user who writes.
    ///   - address: The client's address, for the limits of starting a thread.
    ///   - mayStartThread: Whether a user without a thread gets one (false on routes that may not).
    /// - Throws: `SupportFailure.idempotencyKeyReused` for the key with other text,
    ///   `SupportFailure.alreadySent` when the message a retry answers with was deleted since,
    ///   `SupportFailure.outboxFull`, `SupportFailure.limitReached`, `DeviceCheckFailure.assertionRequired`,
    ///   and the store's errors.
    func send(
        _ text: String, files: [DiscordFile] = [], filesFingerprint: String = "", suggestionID: String? = nil, idempotencyKey: String,
        for id: UserID, from address: String, mayStartThread: Bool = true
    ) async throws -> SupportMessage {
        let fingerprint = SHA256.hash(data: Data(("message\u{0}" + text + (files.isEmpty ? "" : "\u{0}" + filesFingerprint)).utf8))
            .map { String(format: "%02x", $0) }.joined()
        // The store's transaction that accepts it: the trace goes on from here to its delivery.
        let (messageIDs, accepted) = try await intake.traces.span("store.accept-message") { _ in
            try await accept(text, files: files, fingerprint: fingerprint, suggestionID: suggestionID, idempotencyKey: idempotencyKey, for: id, from: address, mayStartThread: mayStartThread)
        }
        if let accepted {
            intake.announce(accepted)
            metrics.accepted(app: id.app)
        }
        return try await sentMessage(messageIDs, text: text)
    }

    private func accept(
        _ text: String, files: [DiscordFile], fingerprint: String, suggestionID: String?, idempotencyKey: String, for id: UserID, from address: String,
        mayStartThread: Bool
    ) async throws -> ([String], OutboxIntake.Accepted?) {
        try await OutboxIntake.retryingTakenIDs {
            try await acceptOnce(text, files: files, fingerprint: fingerprint, suggestionID: suggestionID, idempotencyKey: idempotencyKey, for: id, from: address, mayStartThread: mayStartThread)
        }
    }

    private func acceptOnce(
        _ text: String, files: [DiscordFile], fingerprint: String, suggestionID: String?, idempotencyKey: String, for id: UserID, from address: String,
        mayStartThread: Bool
    ) async throws -> ([String], OutboxIntake.Accepted?) {
        try await users.withUser(id, idempotencyKey: idempotencyKey) { context -> ([String], OutboxIntake.Accepted?) in
            if let kept = context.keptResult {
                guard kept.fingerprint == fingerprint else { throw SupportFailure.idempotencyKeyReused }
                return (kept.messageIDs, nil)
            }
            let accepted = try await intake.accept(
                .message, content: text,
                files: files.map { OutboxItem.File(filename: $0.filename, contentType: $0.contentType, bytes: Data($0.bytes.readableBytesView)) },
                suggestionID: suggestionID, idempotencyKey: idempotencyKey, shown: true, in: &context, from: address,
                mayStartThread: mayStartThread)
            context.result = IdempotentResult(fingerprint: fingerprint, messageIDs: [accepted.id.description])
            return ([accepted.id.description], accepted)
        }
    }

    /// The answer to a send: its first part as the mirror has it (also when an earlier attempt
    /// posted every part and only the answer was lost); a split send shows its whole text.
    private func sentMessage(_ ids: [String], text: String) async throws -> SupportMessage {
        // Deleted since (the user deleted it before retrying): the mirror keeps only its remains,
        // which are no answer; the message was sent all the same.
        guard let first = ids.first.flatMap({ Snowflake($0) }), let mirrored = try await store.mirroredMessages([first]).first,
            !mirrored.deleted
        else {
            throw SupportFailure.alreadySent
        }
        var message = SupportMessage(mirrored)
        if ids.count > 1 {
            message.content = text
            message.partIds = ids
        }
        return message
    }

    /// The user's visible messages, oldest first, from the mirror: with the gateway feed live this
    /// asks Discord nothing. Reading does not mark anything read: the app says what the user saw
    /// (`POST /v1/read`).
    /// - Parameters:
    ///   - record: The user whose thread is read; none yet is an empty page.
    ///   - after: Messages after this id (oldest first from there), or nil.
    ///   - before: Messages before this id, or nil for the newest.
    ///   - limit: How many messages at most.
    /// - Throws: `DiscordError` when the mirror must catch up from Discord and cannot, and the
    ///   store's errors.
    func page(for record: UserRecord, after: Snowflake?, before: Snowflake?, limit: Int) async throws -> MessagePage {
        let thread: Snowflake
        if let current = record.threadID.flatMap({ Snowflake($0) }) {
            guard try await sync.ensureCurrent(current, owner: record.id) else { return MessagePage(messages: [], hasMore: false) }
            thread = current
        } else if record.pendingThread != nil {
            // Messages waiting for the user's first thread: in the placeholder, or already in the
            // thread a delivery is making (the record names it once the delivery is kept). Every
            // thread of the user's, then: few messages, all in the store.
            return try await pendingPage(of: record.id, after: after, before: before, limit: limit)
        } else {
            return MessagePage(messages: [], hasMore: false)
        }
        let cursor: MirrorCursor = if let after { .after(after, before: before) } else { .before(before) }
        let page = try await store.mirrorPage(thread: thread, cursor, limit: limit)
        return MessagePage(messages: page.messages.map(SupportMessage.init), hasMore: page.hasMore, ratingRequest: record.live.ratingRequest?.wire)
    }
}

extension ConversationService {
    /// A page of the conversation of a user whose first thread is being made.
    private func pendingPage(of owner: UserID, after: Snowflake?, before: Snowflake?, limit: Int) async throws -> MessagePage {
        var messages = try await store.conversation(of: owner, after: nil, limit: 1000).messages
            .filter { message in after.map { message.id > $0 } ?? true }
            .filter { message in before.map { message.id < $0 } ?? true }
        let more = messages.count > limit
        messages = after != nil ? Array(messages.prefix(limit)) : Array(messages.suffix(limit))
        return MessagePage(messages: messages.map(SupportMessage.init), hasMore: more)
    }
}

extension JSONEncoder {
    static let api: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
