import Crypto
import DiscordREST
import Foundation
import HTTPTypes
import Prometheus
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

extension SupportService {
    /// Sends the user's text (and files) to their thread. A retry with the same idempotency key
    /// answers what the first attempt answered and posts nothing new; a retry after a part-way
    /// failure posts only the parts still missing. Files go with the first part.
    func postMessage(
        _ text: String, files: [DiscordFile] = [], filesFingerprint: String = "", idempotencyKey: String, for id: UserID, from address: String
    ) async throws -> StoredResponse {
        let fingerprint = SHA256.hash(data: Data(("message\u{0}" + text + (files.isEmpty ? "" : "\u{0}" + filesFingerprint)).utf8))
            .map { String(format: "%02x", $0) }.joined()
        return try await withUser(id, idempotencyKey: idempotencyKey) { context in
            if let stored = context.storedResponse {
                guard stored.fingerprint == fingerprint else {
                    throw APIError(.unprocessableContent, .idempotencyKeyReused, "This Idempotency-Key was used for a different message.")
                }
                return stored
            }
            let parts = text.isEmpty && !files.isEmpty ? [""] : NoteMarkers.posts(ofUserText: text)
            // Parts posted by an earlier attempt under this key (only this key's) are not posted again.
            var ids = context.record?.postedParts(for: idempotencyKey) ?? []
            for (index, part) in parts.enumerated() where index >= ids.count {
                let nonce = Self.nonce("message", id: id, idempotencyKey, String(index))
                // Each part is escaped on its own: a part may begin with a note marker where the text was cut.
                let posted = try await post(.init(content: part, nonce: nonce, files: index == 0 ? files : []), in: &context, from: address)
                ids.append(posted.id)
                try await ingestOwn(posted, partOf: parts.count > 1 ? ids.first.flatMap { Snowflake($0) } : nil, context: context)
                if parts.count > 1 { context.record?.setPostedParts(ids, for: idempotencyKey) }
            }
            context.record?.setPostedParts([], for: idempotencyKey)
            metrics.messagesPosted.increment()
            if !files.isEmpty { metrics.filesUploaded.increment(by: Int64(files.count)) }
            var message = try await sentMessage(ids.first, text: text)
            if parts.count > 1 {
                message.content = text
                message.partIds = ids
            }
            let response = StoredResponse(status: 201, body: try JSONEncoder.api.encode(message), fingerprint: fingerprint)
            context.response = response
            return response
        }
    }

    /// A post of ours, as Discord answered it, into the mirror (with the gateway it comes again; the
    /// merge makes that a no-op).
    func ingestOwn(_ posted: DiscordMessage, partOf: Snowflake?, context: UserContext) async throws {
        guard let record = context.record, let thread = Snowflake(posted.channelId) else { return }
        let bot = try await discordCall { () async throws(DiscordError) in try await self.bot.id() }
        try await ingestion.apply(MirrorIngestion.facts([posted], bot: bot, partOf: partOf), thread: thread, record: record)
    }

    /// The answer to a send: its first part as the mirror has it (also when an earlier attempt
    /// posted every part and only the answer was lost).
    private func sentMessage(_ first: String?, text: String) async throws -> APIMessage {
        guard let first = first.flatMap({ Snowflake($0) }), let mirrored = try await store.mirroredMessages([first]).first else {
            throw APIError(.conflict, .retryInProgress, "This message was already sent; fetch messages to see it.")
        }
        return APIMessage(mirrored)
    }

    /// The user's visible messages, oldest first, from the mirror: with the gateway feed live this
    /// asks Discord nothing. Reading does not mark anything read: the app says what the user saw
    /// (`POST /v1/read`).
    func messages(for record: UserRecord, after: String?, before: String?, limit: Int) async throws -> MessagePage {
        let id = record.id
        guard let thread = record.threadID.flatMap({ Snowflake($0) }) else {
            return MessagePage(messages: [], hasMore: false)
        }
        guard try await sync.ensureCurrent(thread, owner: id) else { return MessagePage(messages: [], hasMore: false) }
        let cursor: MirrorCursor =
            if let after = after.flatMap({ Snowflake($0) }) {
                .after(after, before: before.flatMap { Snowflake($0) })
            } else {
                .before(before.flatMap { Snowflake($0) })
            }
        let page = try await store.mirrorPage(thread: thread, cursor, limit: limit)
        return MessagePage(messages: page.messages.map(APIMessage.init), hasMore: page.hasMore)
    }
}

extension JSONEncoder {
    static let api: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
