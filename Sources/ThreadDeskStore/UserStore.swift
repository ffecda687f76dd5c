import DiscordREST
import Foundation
import ServiceLifecycle
import ThreadDeskCore

/// The per-user serialized store: the role a Durable Object played in the system we replace.
/// It is the sum of small protocols, one per job, so that each part of the server asks for only
/// what it uses; every implementation passes the same contract suite for each of them.
public protocol UserStore:
    UserRecords, UserErasure, IdempotencyRecords, GlobalValues, QuotaBuckets, MirrorStore, PushQueue, JobLocks, StoreLifecycle,
    DeviceAttestations, OutboxStore, AssistLedger, DraftStore, CrashRecords, ConversationRecords, WebhookRecords, UserProfiles, ArticleReads {}

/// The users, one at a time each. `withUser` runs its body one at a time per user, in arrival
/// order; different users run in parallel. Every implementation runs it through
/// ``UserTransaction``: read, run, keep what the body did (also when it throws), return.
public protocol UserRecords: Sendable {
    func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T

    /// Read-only lookups, outside the per-user lock.
    func user(_ id: UserID) async throws -> UserRecord?
    /// The user a bearer token (by its hash) belongs to, whole: an authenticated read needs no second lookup.
    func user(forTokenHash hash: String) async throws -> UserRecord?
    func userID(forThread threadID: String) async throws -> UserID?
}

/// Users leaving for good: on their request, an operator's, or by retention. After an erasure the
/// store holds no row of the user, so their id is free again and none of their tokens works.
public protocol UserErasure: Sendable {
    /// Under the user's lock (the one `withUser` takes, across processes on PostgreSQL), hands
    /// `prepare` what the store holds of the user; once it returns, erases in one transaction,
    /// still under the lock: the user's record (tokens, push token, read state, history), their
    /// idempotency records, the mirror of every thread of theirs, the global values `prepare`
    /// names, the quota buckets keyed by the user (`UserQuota`), and the assistant's drafts for the
    /// user and token ledger of the user (`AssistKey.user`). When `prepare` throws (Discord
    /// refused), nothing is erased and the error is rethrown: the erasure can be retried.
    /// Returns whether there was anything of the user's.
    @discardableResult
    func eraseUser(_ id: UserID, _ prepare: (inout ErasureContext) async throws -> Void) async throws -> Bool

    /// Users whose last activity — their record's last change, or a message in one of their
    /// threads — is before `date`, at most `limit`, in the order of their records' last change.
    func inactiveUsers(before date: Date, limit: Int) async throws -> [UserActivity]

    /// The users of `app` whose key sorts after `after`, in the order of their keys, at most
    /// `limit` (`threaddesk admin app delete` erases them a page at a time).
    func users(of app: AppID, after: UserID?, limit: Int) async throws -> [UserID]
}

extension AppID {
    /// The SQL `LIKE` pattern of its users' keys (`<app>/…`; for the default app, keys without a
    /// `/`, matched with `NOT LIKE`). A slug holds neither `%` nor `_`.
    var userKeyPattern: String { self == .default ? "%/%" : "\(rawValue)/%" }
}

/// What an erasure is about to remove, and what else goes with it.
public struct ErasureContext: Sendable {
    public let id: UserID
    /// nil when the store has no record of the user (an erasure retried after it succeeded).
    public let record: UserRecord?
    /// Every thread of theirs the store knows: the record's, and the mirror's (earlier threads).
    public let threads: [MirrorThread]
    /// Global values to erase with the user (notes kept about them or their threads).
    public var globalKeys: [String] = []

    public init(id: UserID, record: UserRecord?, threads: [MirrorThread]) {
        self.id = id
        self.record = record
        self.threads = threads
    }

    /// The user's threads' ids, the current one first.
    public var threadIDs: [Snowflake] {
        let current = record?.threadID.flatMap { Snowflake($0) }
        return (current.map { [$0] } ?? []) + threads.map(\.id).filter { $0 != current }
    }

    /// The quota buckets keyed by the user, by their exact keys: ids may contain `:`, so a
    /// suffix would also name another user's (`x:u:abc` ends with `:u:abc`).
    public var quotaKeys: [String] { UserQuota.allCases.map { $0.key(id) } }
}

/// The kinds of quota bucket kept per user; the limits build their keys here so that an erasure
/// finds every one of them.
public enum UserQuota: String, Sendable, CaseIterable {
    case send, diagnostics = "diag", read, update, upload

    /// The bucket's key: `<kind>:u:<id>`.
    public func key(_ id: UserID) -> String { "\(rawValue):u:\(id.rawValue)" }
}

/// When a user was last active.
public struct UserActivity: Sendable, Hashable {
    public var id: UserID
    public var lastActivity: Date

    public init(id: UserID, lastActivity: Date) {
        self.id = id
        self.lastActivity = lastActivity
    }
}

/// What requests under an `Idempotency-Key` did (kept by `withUser`), for as long as a retry
/// may come.
public protocol IdempotencyRecords: Sendable {
    /// Forgets the results kept for idempotency keys before `date` (a retry that late is a new
    /// request); returns how many went.
    @discardableResult
    func pruneResults(before date: Date) async throws -> Int
}

/// Small process-wide values, such as the gateway's high-water mark.
public protocol GlobalValues: Sendable {
    func globalValue(_ key: String) async throws -> String?
    func setGlobalValue(_ key: String, to value: String?) async throws
}

/// Token buckets every replica that shares the store shares.
public protocol QuotaBuckets: Sendable {
    /// Takes `cost` tokens from the bucket `key` (`limit.count` tokens, refilled evenly over
    /// `limit.period`): nil when taken, else how long until they are there.
    func takeToken(_ key: String, limit: QuotaLimit, cost: Double) async throws -> Duration?
    /// Puts `cost` tokens back into the bucket `key`, never above its size: a request the server
    /// turned away for a reason of its own (busy) costs the caller nothing.
    func returnToken(_ key: String, limit: QuotaLimit, cost: Double) async throws
    /// Takes a turn in the fixed window `key` (`TurnWindow`): nil when taken, else how long
    /// until the next window opens.
    func takeWindowTurn(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration?
}

/// Jobs that run in one process at a time, whichever replica starts them.
public protocol JobLocks: Sendable {
    /// Runs `body` if no other process of this store runs a job of that name now; nil if one does.
    func exclusively<T: Sendable>(_ job: String, _ body: () async throws -> T) async throws -> T?
}

/// Bringing the store up, and whether it is there.
public protocol StoreLifecycle: Sendable {
    /// Brings the schema up to date. The server runs it before it serves a request; it is safe
    /// when several replicas start at once, and a no-op once done.
    func migrate() async throws
    /// Throws when the store cannot be reached (readiness).
    func checkReachable() async throws
    /// The bus between the processes that share this store; nil when this process is its only user.
    var bus: (any LiveBus)? { get }
    /// What runs for as long as the store is used (a connection pool): started before everything
    /// else and stopped after it; nil when nothing runs.
    var lifetime: (any Service)? { get }
}

extension StoreLifecycle {
    /// A store of this process alone: no bus, nothing running.
    public var bus: (any LiveBus)? { nil }
    public var lifetime: (any Service)? { nil }
}

extension QuotaBuckets {
    /// One token.
    public func takeToken(_ key: String, limit: QuotaLimit) async throws -> Duration? {
        try await takeToken(key, limit: limit, cost: 1)
    }
}

/// A token bucket's size: `count` requests, refilled evenly over `period`.
public struct QuotaLimit: Sendable, Hashable, CustomStringConvertible {
    public var count: Int
    public var period: Duration

    public init(_ count: Int, per period: Duration) {
        self.count = count
        self.period = period
    }

    /// Tokens added per second.
    public var rate: Double { Double(count) / (period / .seconds(1)) }

    public var description: String { "\(count)/\(period.components.seconds)s" }
}

extension UserRecords {
    /// A body that may wait on something else (`UserWork.waitsOnOthers`), the safe assumption.
    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String? = nil, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await withUser(id, idempotencyKey: idempotencyKey, work: .waitsOnOthers, body)
    }
}

/// What a `withUser` body does while it holds the user, so a store that pins a database
/// connection for the body can keep long holders from starving short ones.
public enum UserWork: Sendable {
    /// Reads and writes the user's record and nothing else.
    case brief
    /// May wait on something outside the store (Discord) while it holds the user.
    case waitsOnOthers
}

/// Idempotency keys are the client's; they are short opaque tokens.
public enum IdempotencyKey {
    public static let maxLength = 255

    public static func isValid(_ key: String) -> Bool {
        (1...maxLength).contains(key.utf8.count) && key.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
    }
}

/// The store could not be reached or failed underneath (a database restarting, a full disk):
/// worth retrying shortly, and nothing was half-written.
public struct StoreUnavailableError: Error, CustomStringConvertible {
    public let underlying: String

    public init(_ underlying: any Error) {
        self.underlying = String(describing: underlying)
    }

    public var description: String { "store unavailable: \(underlying)" }
}
