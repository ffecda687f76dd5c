import Foundation
import ThreadDeskCore
import ThreadDeskWire

/// Everything ThreadDesk keeps about one app user.
public struct UserRecord: Sendable, Hashable, Codable {
    public var id: UserID
    /// SHA-256 of the newest bearer token; nil for users only the legacy routes know.
    public var tokenHash: String?
    /// SHA-256 of the user's other live tokens (other devices, sessions renewed since), oldest
    /// first: with `tokenHash`, at most `liveTokenLimit`.
    public var earlierTokenHashes: [String] = []
    /// When each live token was last noted in use (by hash; at most once a day, see
    /// `noteTokenUse`), so tokens left unused end. A token without a note (issued before notes
    /// were kept) counts from its first use after.
    public var tokenUsedAt: [String: Date] = [:]
    /// Whether the user's conversation ever held anything; never cleared (see ``UserHistory``).
    public var history: UserHistory = []
    public var threadID: String? { didSet { if threadID != nil { history.insert(.used) } } }
    /// While the user's messages wait for their first thread (the outbox makes it when Discord
    /// allows): the mirror's placeholder thread that holds them, owned by the user. Cleared when
    /// the thread is made and the placeholder's messages moved into it.
    public var pendingThread: String? { didSet { if pendingThread != nil { history.insert(.used) } } }
    public var pushToken: String? { didSet { if pushToken != nil { history.insert(.used) } } }
    public var pushEnvironment: PushEnvironment?
    /// The device info last posted to the thread as a note.
    public var installation: InstallationInfo?
    /// Device info reported before the user had a thread, posted when the thread is created.
    public var pendingInstallation: InstallationInfo?
    /// Sends split into several Discord posts that failed part-way, one per idempotency key (the
    /// newest few): the posts already made, so the client's retry with that key posts only the rest.
    public var pendingPosts: [PendingPost] = [] { didSet { if !pendingPosts.isEmpty { history.insert(.used) } } }
    public var lastNotifiedMessageID: String?
    /// Support replies pushed most recently (newest last, at most `recentNotifiedLimit`), so a
    /// reply seen twice — live and again in a catch-up — is pushed once, in whatever order.
    public var recentNotifiedIDs: [String] = []
    /// The newest message the user has read (never moves backwards).
    public var lastReadMessageID: String?
    /// Read receipts as live events and in Discord.
    public var live = LiveState()
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: UserID, now: Date = Date()) {
        self.id = id
        self.createdAt = now
        self.updatedAt = now
    }
}

extension UserRecord {
    /// Live tokens per user: a new session beyond this many ends the oldest.
    public static let liveTokenLimit = 10

    /// Makes `hash` the newest live token; the oldest beyond `liveTokenLimit` stop working.
    public mutating func addToken(hash: String) {
        history.insert(.v1)
        if let current = tokenHash { earlierTokenHashes = Array((earlierTokenHashes + [current]).suffix(Self.liveTokenLimit - 1)) }
        tokenHash = hash
        keepUsesOfLiveTokens()
    }

    /// Notes that the token `hash` was used at `date`.
    public mutating func noteTokenUse(hash: String, at date: Date) {
        tokenUsedAt[hash] = date
        keepUsesOfLiveTokens()
    }

    /// Only live tokens' notes are kept: an ended token's would only grow the record.
    private mutating func keepUsesOfLiveTokens() {
        let live = liveTokenHashes
        tokenUsedAt = tokenUsedAt.filter { live.contains($0.key) }
    }

    /// Ends one live token (a sign-out); the newest remaining one takes its place.
    public mutating func removeToken(hash: String) {
        earlierTokenHashes.removeAll { $0 == hash }
        if tokenHash == hash { tokenHash = earlierTokenHashes.popLast() }
        tokenUsedAt[hash] = nil
    }

    /// Nothing was ever done with this user but open sessions: no thread ever (current, deleted,
    /// gone or locked), no message, no queued post, no push token, no diagnostics, no token ever
    /// used for a request. Such a claim protects nothing, so a new one may replace it (a first
    /// session whose answer was lost must not lock a client-chosen id out for good). Once used,
    /// only one of its tokens, or its `userHash`, opens it.
    public var isUnusedClaim: Bool { !history.contains(.used) && threadID == nil && pendingPosts.isEmpty && pushToken == nil }

    /// SHA-256 of every live token.
    public var liveTokenHashes: Set<String> { Set(earlierTokenHashes + (tokenHash.map { [$0] } ?? [])) }

    /// Ends every live token (an unused claim being replaced, a sign-out everywhere).
    public mutating func revokeAllTokens() {
        tokenHash = nil
        earlierTokenHashes = []
        tokenUsedAt = [:]
    }

    /// Whether `hash` is one of the user's live tokens (compared in constant time).
    public func holdsToken(hash: String) -> Bool {
        ([tokenHash].compactMap { $0 } + earlierTokenHashes).reduce(false) { found, live in constantTimeEquals(live, hash) || found }
    }

    public static let recentNotifiedLimit = 64
    public static let pendingPostLimit = 8

    /// The parts already posted for the send under `key`.
    public func postedParts(for key: String) -> [String] {
        pendingPosts.first { $0.idempotencyKey == key }?.postedMessageIDs ?? []
    }

    /// Records the parts posted so far for the send under `key`; an empty list forgets the send.
    public mutating func setPostedParts(_ ids: [String], for key: String) {
        pendingPosts.removeAll { $0.idempotencyKey == key }
        if !ids.isEmpty { pendingPosts = Array((pendingPosts + [PendingPost(idempotencyKey: key, postedMessageIDs: ids)]).suffix(Self.pendingPostLimit)) }
    }
}

/// What an id has been, for good: facts that nothing that happens later (a thread deleted in
/// Discord, a sign-out) may undo, because they decide who may open the id.
public struct UserHistory: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Something was done with the id: a thread (ever), a message, a queued post, a push token,
    /// diagnostics, a legacy call, or one of its tokens used for a request.
    public static let used = UserHistory(rawValue: 1)
    /// The id has had a `/v1` token: the legacy routes never act for it again.
    public static let v1 = UserHistory(rawValue: 2)

    /// Sets what the rows written before the `history` column show (SQLite and PostgreSQL alike).
    public static let backfill = """
        UPDATE users SET history = history
            | CASE WHEN thread_id IS NOT NULL OR push_token IS NOT NULL OR (pending_post IS NOT NULL AND pending_post <> '[]')
                OR id IN (SELECT owner FROM mirror_threads) THEN 1 ELSE 0 END
            | CASE WHEN token_hash IS NOT NULL THEN 2 ELSE 0 END
        """
}

/// What the live conversation keeps per user beside the mirror.
public struct LiveState: Sendable, Hashable, Codable {
    /// The live-event number of the last change of `lastReadMessageID` (0: never).
    public var readSeq: Int64 = 0
    /// The support message that carries the bot's read-receipt reaction in Discord, if any.
    public var reactionMessageID: String?
    /// When the user last got the away message.
    public var awaySentAt: Date?
    /// When the assistant last answered the user itself (away answers are spaced by it).
    public var assistAnsweredAt: Date?
    /// When an agent first replied to the user (nil: never, as far as ThreadDesk noted): the
    /// assistant spends only a share of an app's day on users no agent has answered.
    public var agentAnsweredAt: Date?
    /// The assistant's budget key of the network the user last wrote from (`AssistKey.network`,
    /// a hash: never the address itself).
    public var assistNetwork: String?
    /// A closed conversation waiting for the user's rating (nil: none waits).
    public var ratingRequest: PendingRating?

    public init(readSeq: Int64 = 0, reactionMessageID: String? = nil) {
        self.readSeq = readSeq
        self.reactionMessageID = reactionMessageID
    }

    public var isEmpty: Bool { self == LiveState() }
}

/// A rating asked of the user: the closed conversation, when, and the live-event number it was
/// announced under (`rating.requested`).
public struct PendingRating: Sendable, Hashable, Codable {
    public var conversationID: Int64
    public var requestedAt: Date
    public var seq: Int64

    public init(conversationID: Int64, requestedAt: Date, seq: Int64) {
        (self.conversationID, self.requestedAt, self.seq) = (conversationID, requestedAt, seq)
    }

    /// As a page and the `rating.requested` event carry it.
    public var wire: RatingRequest {
        RatingRequest(
            conversationId: String(conversationID), requestedAt: Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(requestedAt))
    }
}

public struct PendingPost: Sendable, Hashable, Codable {
    public var idempotencyKey: String
    public var postedMessageIDs: [String]

    public init(idempotencyKey: String, postedMessageIDs: [String]) {
        self.idempotencyKey = idempotencyKey
        self.postedMessageIDs = postedMessageIDs
    }
}

public enum PushEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case development
}

/// What a request under an `Idempotency-Key` did, kept so that a retry does nothing again and
/// gets the same result: the Discord messages it posted (first part first) and the file it made.
/// The answer is rebuilt from these; the store keeps no response bytes.
public struct IdempotentResult: Sendable, Hashable, Codable {
    /// Hash of the request that did it: the same key with another request is a client error.
    public var fingerprint: String
    public var messageIDs: [String]
    /// The file the request posted (a diagnostics document), and its size in bytes.
    public var fileName: String?
    public var byteCount: Int?

    public init(fingerprint: String, messageIDs: [String], fileName: String? = nil, byteCount: Int? = nil) {
        self.fingerprint = fingerprint
        self.messageIDs = messageIDs
        self.fileName = fileName
        self.byteCount = byteCount
    }

    /// The status stored beside a result: the one earlier versions kept with their answers (a
    /// valid status, should a replica of an earlier version read the row during an upgrade).
    public static let storedStatus = 201

    /// The stored form: what was done, as JSON (the fingerprint has a column of its own).
    public var encoded: Data { (try? JSONEncoder.sorted.encode(Stored(self))) ?? Data() }

    /// A kept result from its stored form. Rows written before results were kept hold the JSON
    /// answer itself: its message ids (`id`, `partIds`, `messageId`) and file (`filename`,
    /// `size`) are read from it, so a retry across the upgrade still posts nothing.
    public init?(stored body: Data, fingerprint: String) {
        if let stored = try? JSONDecoder().decode(Stored.self, from: body) {
            self.init(fingerprint: fingerprint, messageIDs: stored.messageIDs, fileName: stored.fileName, byteCount: stored.byteCount)
            return
        }
        guard let answer = try? JSONDecoder().decode(OldAnswer.self, from: body) else { return nil }
        let ids = answer.partIds ?? [answer.id ?? answer.messageId].compactMap { $0 }
        guard !ids.isEmpty else { return nil }
        self.init(fingerprint: fingerprint, messageIDs: ids, fileName: answer.filename, byteCount: answer.size)
    }

    private struct Stored: Codable {
        var messageIDs: [String]
        var fileName: String?
        var byteCount: Int?

        init(_ result: IdempotentResult) {
            (messageIDs, fileName, byteCount) = (result.messageIDs, result.fileName, result.byteCount)
        }
    }

    private struct OldAnswer: Decodable {
        var id: String?
        var partIds: [String]?
        var messageId: String?
        var filename: String?
        var size: Int?
    }
}

/// One user's state while `withUser` holds it. Changes to `record` and `result` are written
/// when the body ends, also when it throws: Discord side effects that already happened (a thread
/// created) must be remembered, or a retry would repeat them.
public struct UserContext: Sendable {
    public let id: UserID
    /// nil until the user exists; set it to create the user.
    public var record: UserRecord?
    /// What an earlier request under the idempotency key given to `withUser` did.
    public let keptResult: IdempotentResult?
    /// Set to keep what this request did under the idempotency key.
    public var result: IdempotentResult?
    /// Messages accepted by this request, kept in the outbox with what it changed (one commit).
    public var enqueued: [OutboxItem] = []
    /// The mirror's rows of the messages accepted (`queued`), kept in the same commit: a message
    /// the user was told is kept is in both, or in neither.
    public var accepted: [MirroredMessage] = []
    /// Webhook deliveries of what this request did (a message accepted, a conversation closed),
    /// kept in the same commit as what they report, and like `enqueued` only when the body returned.
    public var webhookEvents: [WebhookDelivery] = []

    public init(id: UserID, record: UserRecord?, keptResult: IdempotentResult?) {
        self.id = id
        self.record = record
        self.keptResult = keptResult
    }
}
