import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// The assistant's ledger and drafts in memory.
struct MemoryAssist {
    struct UsageKey: Hashable {
        var key: String
        var day: String
    }

    var usage: [UsageKey: Int] = [:]
    var drafts: [Snowflake: AssistDraft] = [:]
}

extension MemoryStore {
    public func reserveAssistTokens(_ tokens: Int, day: String, limits: [String: Int]) async throws -> Bool {
        let tokens = max(0, tokens)
        return assist.withLock { assist in
            let fits = limits.allSatisfy { key, limit in
                limit <= 0 || assist.usage[.init(key: key, day: day), default: 0] + tokens <= limit
            }
            guard fits else { return false }
            for key in limits.keys { assist.usage[.init(key: key, day: day), default: 0] += tokens }
            return true
        }
    }

    public func adjustAssistTokens(_ delta: Int, day: String, keys: [String]) async throws {
        assist.withLock { assist in
            for key in Set(keys) {
                let spot = MemoryAssist.UsageKey(key: key, day: day)
                assist.usage[spot] = max(0, assist.usage[spot, default: 0] + delta)
            }
        }
    }

    public func assistTokensUsed(_ key: String, day: String) async throws -> Int {
        assist.withLock { $0.usage[.init(key: key, day: day)] ?? 0 }
    }

    public func pruneAssistUsage(before day: String) async throws -> Int {
        assist.withLock { assist in
            let before = assist.usage.count
            assist.usage = assist.usage.filter { $0.key.day >= day }
            return before - assist.usage.count
        }
    }

    public func draft(_ id: Snowflake) async throws -> AssistDraft? {
        assist.withLock { $0.drafts[id] }
    }

    public func openDrafts(thread: Snowflake) async throws -> [AssistDraft] {
        assist.withLock { assist in
            assist.drafts.values.filter { $0.thread == thread && $0.state.isOpen }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    public func draftsBeingSent(limit: Int) async throws -> [AssistDraft] {
        assist.withLock { assist in
            Array(assist.drafts.values.filter { $0.state == .sending }.sorted { ($0.updatedAt, $0.id) < ($1.updatedAt, $1.id) }.prefix(limit))
        }
    }

    public func saveDraft(_ draft: AssistDraft) async throws {
        assist.withLock { $0.drafts[draft.id] = draft }
    }

    public func pruneDrafts(closedBefore date: Date) async throws -> Int {
        assist.withLock { assist in
            let before = assist.drafts.count
            assist.drafts = assist.drafts.filter { $0.value.state.isOpen || $0.value.updatedAt >= date }
            return before - assist.drafts.count
        }
    }

    /// The user's drafts and ledger rows, in the erasure.
    func eraseAssist(of id: UserID) {
        assist.withLock { assist in
            assist.drafts = assist.drafts.filter { $0.value.owner != id }
            let key = AssistKey.user(id)
            assist.usage = assist.usage.filter { $0.key.key != key }
        }
    }
}
