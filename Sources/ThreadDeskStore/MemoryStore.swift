import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// The store in memory: for unit tests, and the reference the contract tests hold others to.
public final class MemoryStore: UserStore {
    struct State {
        var users: [UserID: UserRecord] = [:]
        var results: [String: (result: IdempotentResult, at: Date)] = [:]
        var globals: [String: String] = [:]
    }

    let state = Mutex(State())
    let lock: KeyedFIFOLock<UserID>
    /// One process serves from this store, so its quotas live in its memory.
    let buckets = TokenBuckets()
    let turnWindows = TurnWindows()
    struct Mirror {
        var threads: [Snowflake: MirrorThread] = [:]
        var messages: [Snowflake: MirroredMessage] = [:]
        var eventSequence: Int64 = 0
        /// Discord's id → ThreadDesk's id, and whose.
        var aliases: [Snowflake: (message: Snowflake, owner: UserID)] = [:]
    }
    let mirror = Mutex(Mirror())
    let jobs = ExclusiveJobs()
    let attestations = Mutex(AttestationState())
    let outboxState = Mutex(MemoryOutbox())
    let assist = Mutex(MemoryAssist())
    let crashes = Mutex(MemoryCrashes())
    let conversations = Mutex(MemoryConversations())
    let webhooks = Mutex(MemoryWebhooks())
    let profiles = Mutex(MemoryProfiles())

    /// - Parameter lockWait: how long a request waits for a user's lock at most.
    public init(lockWait: Duration = UserLockWait.standard) {
        lock = UserLockWait.lock(wait: lockWait)
    }

    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await lock.withLock(id) {
            let resultKey = idempotencyKey.map { "\(id.rawValue)\u{0}\($0)" }
            return try await UserTransaction.run(
                id, idempotencyKey: idempotencyKey,
                read: { state.withLock { state in (state.users[id], resultKey.flatMap { state.results[$0]?.result }) } },
                save: { changed, kept, accepted in
                    state.withLock { state in
                        if let changed { state.users[id] = changed }
                        if let resultKey, let kept, state.results[resultKey] == nil { state.results[resultKey] = (kept.result, Date()) }
                    }
                    try enqueue(accepted.items)
                    enqueueWebhooksNow(accepted.webhooks)
                    mirror.withLock { mirror in
                        for message in accepted.mirrored { mirror.messages[message.id] = message }
                    }
                },
                body: body)
        }
    }

    public func pruneResults(before date: Date) async throws -> Int {
        state.withLock { state in
            let before = state.results.count
            state.results = state.results.filter { $0.value.at >= date }
            return before - state.results.count
        }
    }

    public func user(_ id: UserID) async throws -> UserRecord? {
        state.withLock { $0.users[id] }
    }

    public func user(forTokenHash hash: String) async throws -> UserRecord? {
        state.withLock { $0.users.values.first { $0.tokenHash == hash } }
    }

    public func userID(forThread threadID: String) async throws -> UserID? {
        state.withLock { $0.users.values.first { $0.threadID == threadID }?.id }
    }

    public func globalValue(_ key: String) async throws -> String? {
        state.withLock { $0.globals[key] }
    }

    public func setGlobalValue(_ key: String, to value: String?) async throws {
        state.withLock { $0.globals[key] = value }
    }

    public func takeToken(_ key: String, limit: QuotaLimit, cost: Double) async throws -> Duration? {
        buckets.take(key, limit: limit, cost: cost)
    }

    public func returnToken(_ key: String, limit: QuotaLimit, cost: Double) async throws {
        buckets.giveBack(key, limit: limit, cost: cost)
    }

    public func takeWindowTurn(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration? {
        turnWindows.take(key, limit: limit, window: window, lateness: lateness)
    }

    public func migrate() async throws {}

    public func checkReachable() async throws {}
}
