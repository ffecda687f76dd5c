import Prometheus
import Crypto
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The user's side of the conversation: sending (text and files) and reading, from the mirror.
struct ConversationService: Sendable {
    let users: UserSerializer
    let store: any MirrorStore
    let threads: ThreadService
    let ingestion: MirrorIngestion
    let sync: MirrorSync
    /// The away message, for a user who writes while support is away.
    let away: SupportAvailability?
    /// The curated answers, to name the one the user saw before writing; nil without a FAQ forum.
    let faq: FAQBook?
    let metrics: ServerMetrics

    /// Sends the user's text (and files) to their thread. A retry with the same idempotency key
    /// answers what the first attempt answered and posts nothing new; a retry after a part-way
    /// failure posts only the parts still missing. Files go with the first part.
    /// - Parameters:
    ///   - text: The user's text, split into Discord-sized parts when long.
    ///   - files: Files for the first part; `filesFingerprint` tells a retry's files apart.
    ///   - suggestionID: The curated answer the user saw before writing, noted for the agent.
    ///   - idempotencyKey: The client's key for this send.
    ///   - id: The user who writes.
    ///   - address: The client's address, for the limits of starting a thread.
    ///   - mayStartThread: Whether a user without a thread gets one (false on routes that may not).
    /// - Throws: `SupportFailure.idempotencyKeyReused` for the key with other text,
    ///   `SupportFailure.alreadySent` when the message a retry answers with was deleted since,
    ///   `DiscordError` when Discord refuses or fails, and the store's errors.
    func send(
        _ text: String, files: [DiscordFile] = [], filesFingerprint: String = "", suggestionID: String? = nil, idempotencyKey: String,
        for id: UserID, from address: String, mayStartThread: Bool = true
    ) async throws -> SupportMessage {
        var suggestion: CuratedAnswer?
        if let suggestionID, let faq { suggestion = await faq.answer(suggestionID) }
        let fingerprint = SHA256.hash(data: Data(("message\u{0}" + text + (files.isEmpty ? "" : "\u{0}" + filesFingerprint)).utf8))
            .map { String(format: "%02x", $0) }.joined()
        let ids = try await users.withUser(id, idempotencyKey: idempotencyKey) { context in
            if let kept = context.keptResult {
                guard kept.fingerprint == fingerprint else { throw SupportFailure.idempotencyKeyReused }
                return kept.messageIDs
            }
            let ids = try await post(
                text, files: files, idempotencyKey: idempotencyKey, in: &context, from: address, mayStartThread: mayStartThread)
            context.result = IdempotentResult(fingerprint: fingerprint, messageIDs: ids)
            if let suggestion { await noteSuggestion(suggestion, idempotencyKey: idempotencyKey, in: context) }
            await away?.answer(&context)
            metrics.messagesPosted.increment()
            if !files.isEmpty { metrics.filesUploaded.increment(by: Int64(files.count)) }
            return ids
        }
        return try await sentMessage(ids, text: text)
    }

    /// A `:ninja:` note after the user's message naming the curated answer they saw before writing
    /// it, so the agent does not send it again. Posted once (nonce); a failure costs only the note.
    private func noteSuggestion(_ answer: CuratedAnswer, idempotencyKey: String, in context: UserContext) async {
        guard let record = context.record, let thread = record.threadID else { return }
        let note = SuggestionNote.text(for: answer)
        do {
            let posted = try await threads.discord.createMessage(
                in: thread, .init(content: note, nonce: ThreadNotes.nonce("suggestion", id: context.id, idempotencyKey, answer.id)))
            try? await ingestion.ingestOwn(posted, record: record)
        } catch {
            threads.logger.warning("Could not post the note of the suggestion the user saw", metadata: ["error": "\(error)"])
        }
    }

    /// Posts every part of `text` not posted yet under `idempotencyKey`; the ids of all parts.
    private func post(
        _ text: String, files: [DiscordFile], idempotencyKey: String, in context: inout UserContext, from address: String,
        mayStartThread: Bool
    ) async throws -> [String] {
        let parts = text.isEmpty && !files.isEmpty ? [""] : NoteMarkers.posts(ofUserText: text)
        // Parts posted by an earlier attempt under this key (only this key's) are not posted again.
        var ids = context.record?.postedParts(for: idempotencyKey) ?? []
        for (index, part) in parts.enumerated() where index >= ids.count {
            let nonce = ThreadNotes.nonce("message", id: context.id, idempotencyKey, String(index))
            // Each part is escaped on its own: a part may begin with a note marker where the text was cut.
            let posted = try await threads.post(
                .init(content: part, nonce: nonce, files: index == 0 ? files : []), in: &context, from: address, mayStartThread: mayStartThread)
            ids.append(posted.id)
            try await ingestion.ingestOwn(posted, partOf: parts.count > 1 ? ids.first.flatMap { Snowflake($0) } : nil, record: context.record)
            if parts.count > 1 { context.record?.setPostedParts(ids, for: idempotencyKey) }
        }
        context.record?.setPostedParts([], for: idempotencyKey)
        return ids
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
        guard let thread = record.threadID.flatMap({ Snowflake($0) }) else { return MessagePage(messages: [], hasMore: false) }
        guard try await sync.ensureCurrent(thread, owner: record.id) else { return MessagePage(messages: [], hasMore: false) }
        let cursor: MirrorCursor = if let after { .after(after, before: before) } else { .before(before) }
        let page = try await store.mirrorPage(thread: thread, cursor, limit: limit)
        return MessagePage(messages: page.messages.map(SupportMessage.init), hasMore: page.hasMore)
    }
}

extension JSONEncoder {
    static let api: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
