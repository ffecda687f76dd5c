import Prometheus
import Crypto
import DiscordREST
import Foundation
import Logging
import NIOCore
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The user's side of the conversation: sending (text and files) and reading, from the mirror.
/// A send is accepted into the outbox (a committed transaction) and answered at once; Discord gets
/// it from `OutboxDelivery`.
struct ConversationService: Sendable {
    let users: UserSerializer
    let store: any UserStore
    let threads: ThreadService
    let ingestion: MirrorIngestion
    let sync: MirrorSync
    let outbox: OutboxDelivery
    let ids: MessageIDs
    let settings: OutboxSettings
    let metrics: ServerMetrics
    let now: @Sendable () -> Date

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
        let (messageIDs, accepted) = try await users.withUser(id, idempotencyKey: idempotencyKey) { context -> ([String], Snowflake?) in
            if let kept = context.keptResult {
                guard kept.fingerprint == fingerprint else { throw SupportFailure.idempotencyKeyReused }
                return (kept.messageIDs, nil)
            }
            let item = try await accept(
                text, files: files, suggestionID: suggestionID, idempotencyKey: idempotencyKey, in: &context, from: address,
                mayStartThread: mayStartThread)
            context.result = IdempotentResult(fingerprint: fingerprint, messageIDs: [item.id.description])
            return ([item.id.description], item.threadID)
        }
        if let accepted {
            ingestion.announceAccepted(owner: id, thread: accepted)
            outbox.wake()
            metrics.messagesAccepted.increment()
        }
        return try await sentMessage(messageIDs, text: text)
    }

    /// Keeps the message in the outbox and its `queued` row in the mirror (in the user's thread,
    /// or the placeholder that holds a threadless user's messages), both saved with `context`.
    /// - Returns: The mirror's row of it.
    private func accept(
        _ text: String, files: [DiscordFile], suggestionID: String?, idempotencyKey: String, in context: inout UserContext,
        from address: String, mayStartThread: Bool
    ) async throws -> MirroredMessage {
        guard var record = context.record else { throw SupportFailure.notAuthenticated }
        let size = text.utf8.count + files.reduce(0) { $0 + $1.bytes.readableBytes }
        try await checkRoom(for: size, owner: record.id)
        let time = now()
        let thread: Snowflake
        if let current = record.threadID.flatMap({ Snowflake($0) }) ?? record.pendingThread.flatMap({ Snowflake($0) }) {
            thread = current
        } else {
            // The first message makes the thread: its limits say yes now, not when Discord is asked.
            guard mayStartThread else { throw DeviceCheckFailure.assertionRequired }
            try await threads.quotas.charge(.thread, address: address)
            thread = ids.next(at: time)
            try await store.saveMirrorThread(MirrorThread(id: thread, owner: record.id, complete: true, lastActivity: time))
            record.pendingThread = thread.description
        }
        let id = ids.next(at: time)
        context.enqueued.append(
            OutboxItem(
                id: id, owner: record.id, content: text,
                files: files.map { OutboxItem.File(filename: $0.filename, contentType: $0.contentType, bytes: Data($0.bytes.readableBytesView)) },
                idempotencyKey: idempotencyKey, suggestionID: suggestionID, acceptedAt: time, mayStartThread: mayStartThread))
        var row = MirroredMessage(
            id: id, threadID: thread, author: .user, authorID: nil, authorUsername: "", authorName: nil, type: 0, content: text,
            attachments: files.enumerated().map { index, file in
                // Served from the outbox until Discord has them (then under Discord's ids).
                MirroredMessage.Attachment(
                    id: ids.next(at: time), filename: file.filename, size: file.bytes.readableBytes, contentType: file.contentType,
                    url: OutboxFiles.url(index: index), proxyURL: "")
            },
            replyTo: nil, createdAt: Self.timestamp(time), editedAt: nil, visible: true)
        row.delivery = .queued
        if let number = try await store.nextEventSequences(1).first { (row.eventSeq, row.shownSeq) = (number, number) }
        context.accepted.append(row)
        record.updatedAt = time
        context.record = record
        return row
    }

    /// 503 `busy` when the message would take the deployment's or the user's outbox past its cap.
    private func checkRoom(for size: Int, owner: UserID) async throws {
        let mine = try await store.outboxUsage(of: owner)
        if mine.count + 1 > settings.maxMessagesPerUser || mine.bytes + size > settings.maxBytesPerUser {
            throw SupportFailure.outboxFull(scope: "yours", retryAfter: .seconds(30))
        }
        let all = try await store.outboxUsage(of: nil)
        if all.bytes + size > settings.maxBytes { throw SupportFailure.outboxFull(scope: "the server's", retryAfter: .seconds(60)) }
    }

    /// Discord's timestamp format (ISO 8601, milliseconds, UTC) for a message accepted at `date`.
    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
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
        return MessagePage(messages: page.messages.map(SupportMessage.init), hasMore: page.hasMore)
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
