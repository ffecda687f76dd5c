import Foundation
import ThreadDeskCore

/// The one shape of `withUser`, whichever store runs it (inside its own per-user lock and
/// transaction): read the user and what an earlier request under the idempotency key did, run
/// the body, keep what it changed, then answer with the body's result or error. What the body
/// changed is kept also when it threw: whatever it did in Discord (a thread made) must be
/// remembered, or a retry would do it again. The messages it accepted (`enqueued`) are kept only
/// when it returned.
enum UserTransaction {
    static func run<T: Sendable>(
        _ id: UserID, idempotencyKey: String?,
        read: () async throws -> (record: UserRecord?, kept: IdempotentResult?),
        save: (_ changed: UserRecord?, _ result: (key: String, result: IdempotentResult)?, _ accepted: Accepted) async throws -> Void,
        body: (inout UserContext) async throws -> T
    ) async throws -> T {
        let (record, kept) = try await read()
        var context = UserContext(id: id, record: record, keptResult: kept)
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(&context))
        } catch {
            outcome = .failure(error)
        }
        let changed = context.record.flatMap { $0 != record ? $0 : nil }
        let result = idempotencyKey.flatMap { key in context.result.map { (key, $0) } }
        // Messages are accepted only by a body that returned: a failed request accepted nothing.
        var accepted = Accepted()
        if case .success = outcome { accepted = Accepted(items: context.enqueued, mirrored: context.accepted, webhooks: context.webhookEvents) }
        if changed != nil || result != nil || !accepted.isEmpty { try await save(changed, result, accepted) }
        return try outcome.get()
    }

    /// What a body that returned accepted: outbox items and their mirror rows, one commit.
    struct Accepted {
        var items: [OutboxItem] = []
        var mirrored: [MirroredMessage] = []
        /// Webhook deliveries of what the body did (`UserContext.webhookEvents`).
        var webhooks: [WebhookDelivery] = []
        var isEmpty: Bool { items.isEmpty && mirrored.isEmpty && webhooks.isEmpty }
    }
}

/// A user record as the `users` table holds it, column by column in the order the migrations
/// made them (v1's, then `live_state`, `earlier_token_hashes`, `history`): the one mapping both
/// SQL stores read and write. Nested values live in JSON text columns.
struct UserColumns: Codable {
    var id: String
    var token_hash: String?
    var thread_id: String?
    var push_token: String?
    var push_environment: String?
    var installation: String?
    var pending_installation: String?
    var pending_post: String?
    var last_notified_message_id: String?
    var last_read_message_id: String?
    var recent_notified_ids: String?
    /// Retired: the unread count is worked out from the mirror (`LiveFeed.unreadCount`), never
    /// stored. The column stays, written 0, so that databases made before keep their shape and a
    /// replica of an earlier version beside this one still reads its rows.
    var unread_count: Int
    var created_at: Date
    var updated_at: Date
    var live_state: String?
    var earlier_token_hashes: String?
    var history: Int
    var token_used_at: String?
    /// The placeholder thread of a user whose messages wait for their first thread (`UserRecord.pendingThread`).
    var pending_thread: String?

    /// The column names, comma separated, in order.
    static let names = """
        id, token_hash, thread_id, push_token, push_environment, installation, pending_installation, pending_post, \
        last_notified_message_id, last_read_message_id, recent_notified_ids, unread_count, created_at, updated_at, live_state, \
        earlier_token_hashes, history, token_used_at, pending_thread
        """

    init(
        id: String, token_hash: String?, thread_id: String?, push_token: String?, push_environment: String?, installation: String?,
        pending_installation: String?, pending_post: String?, last_notified_message_id: String?, last_read_message_id: String?,
        recent_notified_ids: String?, unread_count: Int, created_at: Date, updated_at: Date, live_state: String?,
        earlier_token_hashes: String?, history: Int, token_used_at: String?, pending_thread: String? = nil
    ) {
        self.pending_thread = pending_thread
        (self.id, self.token_hash, self.thread_id, self.push_token, self.push_environment) =
            (id, token_hash, thread_id, push_token, push_environment)
        (self.installation, self.pending_installation, self.pending_post) = (installation, pending_installation, pending_post)
        (self.last_notified_message_id, self.last_read_message_id, self.recent_notified_ids) =
            (last_notified_message_id, last_read_message_id, recent_notified_ids)
        (self.unread_count, self.created_at, self.updated_at) = (unread_count, created_at, updated_at)
        (self.live_state, self.earlier_token_hashes, self.history, self.token_used_at) = (live_state, earlier_token_hashes, history, token_used_at)
    }

    init(_ record: UserRecord) {
        self.init(
            id: record.id.rawValue, token_hash: record.tokenHash, thread_id: record.threadID, push_token: record.pushToken,
            push_environment: record.pushEnvironment?.rawValue, installation: RecordJSON.encode(record.installation),
            pending_installation: RecordJSON.encode(record.pendingInstallation), pending_post: RecordJSON.encode(record.pendingPosts),
            last_notified_message_id: record.lastNotifiedMessageID, last_read_message_id: record.lastReadMessageID,
            recent_notified_ids: RecordJSON.encode(record.recentNotifiedIDs), unread_count: 0,
            created_at: record.createdAt, updated_at: record.updatedAt,
            live_state: record.live.isEmpty ? nil : RecordJSON.encode(record.live),
            earlier_token_hashes: record.earlierTokenHashes.isEmpty ? nil : RecordJSON.encode(record.earlierTokenHashes),
            history: record.history.rawValue, token_used_at: record.tokenUsedAt.isEmpty ? nil : RecordJSON.encode(record.tokenUsedAt),
            pending_thread: record.pendingThread)
    }

    struct InvalidRow: Error, CustomStringConvertible {
        var description: String { "a user row with an invalid user id" }
    }

    var record: UserRecord {
        get throws {
            guard let userID = UserID(storageKey: id) else { throw InvalidRow() }
            var record = UserRecord(id: userID, now: created_at)
            record.tokenHash = token_hash
            record.earlierTokenHashes = RecordJSON.decode(earlier_token_hashes) ?? []
            record.threadID = thread_id
            record.pushToken = push_token
            record.pushEnvironment = push_environment.flatMap(PushEnvironment.init(rawValue:))
            record.installation = RecordJSON.decode(installation)
            record.pendingInstallation = RecordJSON.decode(pending_installation)
            record.pendingPosts = RecordJSON.decode(pending_post) ?? []
            record.lastNotifiedMessageID = last_notified_message_id
            record.lastReadMessageID = last_read_message_id
            record.recentNotifiedIDs = RecordJSON.decode(recent_notified_ids) ?? []
            record.updatedAt = updated_at
            record.live = RecordJSON.decode(live_state) ?? LiveState()
            record.history.formUnion(UserHistory(rawValue: history))
            record.tokenUsedAt = RecordJSON.decode(token_used_at) ?? [:]
            record.pendingThread = pending_thread
            return record
        }
    }
}

/// Small nested values of a record (device info, pending post, pushed ids) live in JSON text columns.
enum RecordJSON {
    static func encode<T: Encodable>(_ value: T?) -> String? {
        value.flatMap { try? String(decoding: JSONEncoder.sorted.encode($0), as: UTF8.self) }
    }

    static func decode<T: Decodable>(_ text: String?) -> T? {
        guard let text, !text.isEmpty else { return nil }
        // Empty lists are the common case on every read of a user or a message: no decoder for them.
        if text == "[]", let empty = [Never]() as? T { return empty }
        return try? decoder.decode(T.self, from: Data(text.utf8))
    }

    private static let decoder = JSONDecoder()
}

extension JSONEncoder {
    static let sorted: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}
