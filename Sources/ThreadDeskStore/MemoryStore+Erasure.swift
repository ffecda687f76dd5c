import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

extension MemoryStore {
    public func eraseUser(_ id: UserID, _ prepare: (inout ErasureContext) async throws -> Void) async throws -> Bool {
        try await lock.withLock(id) {
            let record = state.withLock { $0.users[id] }
            let threads = mirror.withLock { $0.threads.values.filter { $0.owner == id }.sorted { $0.id < $1.id } }
            var context = ErasureContext(id: id, record: record, threads: threads)
            try await prepare(&context)
            let erasure = context
            let gone = Set(erasure.threadIDs)
            mirror.withLock { mirror in
                mirror.threads = mirror.threads.filter { !gone.contains($0.key) && $0.value.owner != id }
                mirror.messages = mirror.messages.filter { !gone.contains($0.value.threadID) }
                mirror.aliases = mirror.aliases.filter { $0.value.owner != id }
            }
            state.withLock { state in
                state.users[id] = nil
                let prefix = "\(id.rawValue)\u{0}"
                state.results = state.results.filter { !$0.key.hasPrefix(prefix) }
                for key in erasure.globalKeys { state.globals[key] = nil }
            }
            outboxState.withLock { outbox in
                outbox.items = outbox.items.filter { $0.value.owner != id }
                outbox.holds[id] = nil
            }
            eraseAssist(of: id)
            eraseCrashes(of: id)
            eraseWebhooks(of: id)
            conversations.withLock { $0.erase(id) }
            profiles.withLock { $0.erase(id) }
            buckets.forget(keys: erasure.quotaKeys)
            return record != nil || !threads.isEmpty
        }
    }

    public func inactiveUsers(before date: Date, limit: Int) async throws -> [UserActivity] {
        let users = state.withLock { Array($0.users.values) }
        let threads = mirror.withLock { Array($0.threads.values) }
        return users.sorted { ($0.updatedAt, $0.id.rawValue) < ($1.updatedAt, $1.id.rawValue) }
            .compactMap { user -> UserActivity? in
                let latest = threads.filter { $0.owner == user.id }.map(\.lastActivity).max() ?? .distantPast
                return user.updatedAt < date && latest < date ? UserActivity(id: user.id, lastActivity: max(user.updatedAt, latest)) : nil
            }
            .prefix(max(0, limit)).map { $0 }
    }

    public func users(of app: AppID, after: UserID?, limit: Int) async throws -> [UserID] {
        let ids = state.withLock { $0.users.keys.filter { $0.app == app && $0.rawValue > (after?.rawValue ?? "") } }
        return Array(ids.sorted { $0.rawValue < $1.rawValue }.prefix(max(0, limit)))
    }

    public func conversation(of owner: UserID, after: Snowflake?, limit: Int) async throws -> MirrorPage {
        let shown = mirror.withLock { state in
            state.messages.values.filter { message in
                state.threads[message.threadID]?.owner == owner && message.visible && !message.deleted && after.map { message.id > $0 } ?? true
            }.sorted { $0.id < $1.id }
        }
        return MirrorPage(messages: Array(shown.prefix(limit)), hasMore: shown.count > limit)
    }
}
