import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// The store in memory: for unit tests, and the reference the contract tests hold others to.
public final class MemoryStore: UserStore {
    private struct State {
        var users: [UserID: UserRecord] = [:]
        var responses: [String: (response: StoredResponse, at: Date)] = [:]
        var globals: [String: String] = [:]
    }

    private let state = Mutex(State())
    private let lock = KeyedFIFOLock<UserID>(name: \.logValue)
    /// One process serves from this store, so its quotas live in its memory.
    private let buckets = TokenBuckets()
    struct Mirror {
        var threads: [Snowflake: MirrorThread] = [:]
        var messages: [Snowflake: MirroredMessage] = [:]
        var eventSequence: Int64 = 0
    }
    let mirror = Mutex(Mirror())
    let jobs = ExclusiveJobs()

    public init() {}

    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await lock.withLock(id) {
            let responseKey = idempotencyKey.map { "\(id.rawValue)\u{0}\($0)" }
            var context = state.withLock { state in
                UserContext(id: id, record: state.users[id], storedResponse: responseKey.flatMap { state.responses[$0]?.response })
            }
            defer {
                state.withLock { state in
                    if let record = context.record { state.users[id] = record }
                    if let responseKey, let response = context.response, state.responses[responseKey] == nil {
                        state.responses[responseKey] = (response, Date())
                    }
                }
            }
            return try await body(&context)
        }
    }

    public func pruneResponses(before date: Date) async throws -> Int {
        state.withLock { state in
            let before = state.responses.count
            state.responses = state.responses.filter { $0.value.at >= date }
            return before - state.responses.count
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

    public func checkReachable() async throws {}
}
