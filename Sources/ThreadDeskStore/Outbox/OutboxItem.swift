import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskWire

/// A user's message ThreadDesk has accepted and Discord does not have yet: what delivering it
/// takes. Kept in the store from the moment it is accepted (in the transaction that accepts it,
/// `UserContext.enqueued`) until Discord has all of it; any process of the deployment delivers it.
public struct OutboxItem: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        /// Text and files the user sent.
        case message
        /// A diagnostics report: its file and readable summary.
        case diagnostics
        /// A crash report's note, with its payload as a file (`content` is the note).
        case crash
        /// A note of ThreadDesk's about the conversation (the user's rating): `content` is the whole note.
        case note
    }

    /// A file waiting with its message.
    public struct File: Sendable, Hashable {
        public var filename: String
        public var contentType: String?
        public var bytes: Data

        public init(filename: String, contentType: String?, bytes: Data) {
            (self.filename, self.contentType, self.bytes) = (filename, contentType, bytes)
        }
    }

    /// The message's id from the moment it is accepted (`MessageIDs`): Discord's ids stay internal.
    public var id: Snowflake
    public var owner: UserID
    public var kind: Kind
    public var content: String
    public var files: [File]
    /// The client's key of the send that accepted it.
    public var idempotencyKey: String
    /// The curated answer the user saw before writing, noted for the agent after the message.
    public var suggestionID: String?
    public var acceptedAt: Date
    /// Tries that failed for a reason that passes (Discord down, a 429).
    public var attempts: Int
    /// Not tried before this moment (a backoff); the user's later items wait behind it. For a
    /// failed item, when Discord refused it: its files are let go `OUTBOX_FAILED_KEEP_DAYS` later.
    public var nextAttempt: Date
    /// Discord's ids of the parts posted so far: a long text is several posts, and a delivery cut
    /// short goes on from the first part not posted.
    public var postedParts: [Snowflake]
    /// Why Discord refused it for good; nil while it waits.
    public var failure: DeliveryFailure?
    /// Whether delivering it may make the user a new thread (App Attest: the send that accepted
    /// it was asserted, or needs none); when the thread is gone and it may not, it fails.
    public var mayStartThread: Bool
    /// The W3C `traceparent` of the send that accepted it (tracing on): its delivery, in whatever
    /// process and however much later, continues that trace.
    public var traceparent: String?

    public init(
        id: Snowflake, owner: UserID, kind: Kind = .message, content: String, files: [File] = [], idempotencyKey: String,
        suggestionID: String? = nil, acceptedAt: Date, attempts: Int = 0, nextAttempt: Date? = nil, postedParts: [Snowflake] = [],
        failure: DeliveryFailure? = nil, mayStartThread: Bool = true, traceparent: String? = nil
    ) {
        self.mayStartThread = mayStartThread
        self.traceparent = traceparent
        (self.id, self.owner, self.kind, self.content, self.files) = (id, owner, kind, content, files)
        (self.idempotencyKey, self.suggestionID, self.acceptedAt) = (idempotencyKey, suggestionID, acceptedAt)
        (self.attempts, self.nextAttempt, self.postedParts, self.failure) = (attempts, nextAttempt ?? acceptedAt, postedParts, failure)
    }

    /// Bytes it keeps waiting: its text and its files.
    public var size: Int { content.utf8.count + files.reduce(0) { $0 + $1.bytes.count } }

    /// Whether it waits for a delivery (not refused for good).
    public var isQueued: Bool { failure == nil }
}

/// Discord's refusal of a message for good: its code (Discord's JSON error code, or ThreadDesk's
/// name for the reason) and what it said, as the API shows it.
public typealias DeliveryFailure = DeliveryError

/// An accepted message's id is another message's already (two processes drew the same worker
/// bits, `MessageIDs`): the accepting transaction fails rather than lose either message.
public struct OutboxIDTaken: Error, CustomStringConvertible {
    public let id: Snowflake
    public var description: String { "the outbox already holds another message with id \(id)" }
}

/// What waits in an outbox: how many items (failed ones included: their files wait for a retry
/// or a delete), their bytes, how many of them failed and their bytes, and since when the oldest
/// still queued waits.
public struct OutboxUsage: Sendable, Hashable {
    public var count: Int
    public var bytes: Int
    /// When the oldest item still waiting for a delivery was accepted (failed ones wait for the user).
    public var oldest: Date?
    public var failed: Int
    /// The failed items' share of `bytes`: capped per user on its own, never the deployment's room.
    public var failedBytes: Int

    public init(count: Int = 0, bytes: Int = 0, oldest: Date? = nil, failed: Int = 0, failedBytes: Int = 0) {
        (self.count, self.bytes, self.oldest, self.failed, self.failedBytes) = (count, bytes, oldest, failed, failedBytes)
    }

    /// The bytes of the items still to be delivered.
    public var queuedBytes: Int { bytes - failedBytes }
}

/// A failed item that still keeps files, and their bytes.
public struct FailedOutboxFiles: Sendable, Hashable {
    public var id: Snowflake
    public var owner: UserID
    public var bytes: Int

    public init(id: Snowflake, owner: UserID, bytes: Int) {
        (self.id, self.owner, self.bytes) = (id, owner, bytes)
    }
}

/// The messages accepted and not yet in Discord. Items are added with the transaction that
/// accepts them (`UserContext.enqueued`); a user's queue is delivered by one holder at a time
/// (`claimOutbox`), first accepted first.
public protocol OutboxStore: Sendable {
    /// The user's items, waiting and failed, in the order they were accepted.
    func outbox(of owner: UserID) async throws -> [OutboxItem]
    /// One item, files included; nil when it is not (or no longer) waiting.
    func outboxItem(_ id: Snowflake) async throws -> OutboxItem?
    /// Writes an item's delivery back (attempts, next attempt, parts posted, failure) and its
    /// content (an edit while it waits). With a fence, only while its holder holds the owner's
    /// queue (a holder whose hold ran out writes nothing over the next one's). False when nothing
    /// was written (the item gone, or the fence down).
    @discardableResult
    func updateOutboxItem(_ item: OutboxItem, fence: OutboxFence?) async throws -> Bool
    /// Removes an item and its files: delivered, or withdrawn while it waited. With a fence, only
    /// while its holder holds the owner's queue. False when nothing was removed.
    @discardableResult
    func removeOutboxItem(_ id: Snowflake, fence: OutboxFence?) async throws -> Bool
    /// Users whose first waiting item is due by `now` and whose queue no holder has, the longest
    /// waiting first.
    func outboxOwnersDue(at now: Date, limit: Int) async throws -> [UserID]
    /// When the first waiting item of some user's queue is next due (a held queue: not before its
    /// hold runs out); nil when nothing waits.
    func nextOutboxDue() async throws -> Date?
    /// Takes the user's queue for `holder` until `until` (again, when it is the holder already);
    /// false while another holder's hold has not run out at `now`.
    func claimOutbox(of owner: UserID, holder: String, until: Date, now: Date) async throws -> Bool
    /// Gives the user's queue back, if `holder` has it.
    func releaseOutbox(of owner: UserID, holder: String) async throws
    /// Makes every waiting item that failed for a passing reason due at `now` (Discord is back:
    /// the backoffs its outage built up need not run out first); its count of attempts stays.
    /// - Returns: How many items are due sooner.
    @discardableResult
    func retryWaitingOutbox(at now: Date) async throws -> Int
    /// Gives back every queue's hold but `holder`'s: at the start of the one process a store
    /// serves (SQLite), whatever holds are left are a killed process's.
    func releaseOutboxHolds(except holder: String) async throws
    /// What waits (failed items included: their files wait for a retry or a delete): everyone's
    /// when `owner` is nil.
    func outboxUsage(of owner: UserID?) async throws -> OutboxUsage
    /// Failed items that keep files, first accepted first: `owner`'s (everyone's when nil), and
    /// with `failedBefore` only those refused before it (their `nextAttempt`).
    func failedOutboxFiles(of owner: UserID?, failedBefore: Date?, limit: Int) async throws -> [FailedOutboxFiles]
    /// Lets go of a failed item's files, its text kept (a retry sends the text alone). False when
    /// it is no failed item with files (gone, or waiting again after an edit).
    @discardableResult
    func dropFailedOutboxFiles(_ id: Snowflake) async throws -> Bool
}

/// A write by the holder of a user's queue: it applies only while `holder`'s hold has not run out
/// at `now`.
public struct OutboxFence: Sendable, Hashable {
    public var holder: String
    public var now: Date

    public init(holder: String, now: Date) {
        (self.holder, self.now) = (holder, now)
    }
}

extension OutboxStore {
    /// `updateOutboxItem` with no fence (the user's own edit, under their lock).
    public func updateOutboxItem(_ item: OutboxItem) async throws {
        try await updateOutboxItem(item, fence: nil)
    }

    /// `removeOutboxItem` with no fence (the user's own delete, under their lock).
    public func removeOutboxItem(_ id: Snowflake) async throws {
        try await removeOutboxItem(id, fence: nil)
    }
}
