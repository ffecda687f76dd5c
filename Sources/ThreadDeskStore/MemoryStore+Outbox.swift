import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// The outbox in memory: items by id, and each user's hold.
struct MemoryOutbox {
    var items: [Snowflake: OutboxItem] = [:]
    var holds: [UserID: (holder: String, until: Date)] = [:]

    /// Whether a write under `fence` applies to `owner`'s queue (always without one).
    func admits(_ fence: OutboxFence?, owner: UserID) -> Bool {
        guard let fence else { return true }
        guard let hold = holds[owner] else { return false }
        return hold.holder == fence.holder && hold.until > fence.now
    }

    /// Each user's first waiting item.
    var heads: [OutboxItem] {
        Dictionary(grouping: items.values.filter(\.isQueued), by: \.owner).values.compactMap { $0.min { $0.id < $1.id } }
    }
}

extension MemoryStore {
    func enqueue(_ items: [OutboxItem]) throws {
        try outboxState.withLock { outbox in
            for item in items {
                if let kept = outbox.items[item.id] {
                    // Kept already: the same message (a commit retried) is no error; another's is.
                    guard kept.owner == item.owner, kept.idempotencyKey == item.idempotencyKey else { throw OutboxIDTaken(id: item.id) }
                    continue
                }
                outbox.items[item.id] = item
            }
        }
    }

    public func outbox(of owner: UserID) async throws -> [OutboxItem] {
        outboxState.withLock { $0.items.values.filter { $0.owner == owner }.sorted { $0.id < $1.id } }
    }

    public func outboxItem(_ id: Snowflake) async throws -> OutboxItem? {
        outboxState.withLock { $0.items[id] }
    }

    public func updateOutboxItem(_ item: OutboxItem, fence: OutboxFence?) async throws -> Bool {
        outboxState.withLock { outbox in
            guard let kept = outbox.items[item.id], outbox.admits(fence, owner: kept.owner) else { return false }
            var updated = item
            // The item's identity and what it carries stay: only its text and delivery change.
            (updated.owner, updated.kind, updated.files, updated.acceptedAt) = (kept.owner, kept.kind, kept.files, kept.acceptedAt)
            updated.traceparent = kept.traceparent
            outbox.items[item.id] = updated
            return true
        }
    }

    public func removeOutboxItem(_ id: Snowflake, fence: OutboxFence?) async throws -> Bool {
        outboxState.withLock { outbox in
            guard let kept = outbox.items[id], outbox.admits(fence, owner: kept.owner) else { return false }
            outbox.items[id] = nil
            return true
        }
    }

    public func outboxOwnersDue(at now: Date, limit: Int) async throws -> [UserID] {
        outboxState.withLock { outbox in
            outbox.heads.filter { head in
                head.nextAttempt <= now && !(outbox.holds[head.owner].map { $0.until > now } ?? false)
            }
            .sorted { $0.id < $1.id }.prefix(max(0, limit)).map(\.owner)
        }
    }

    public func nextOutboxDue() async throws -> Date? {
        outboxState.withLock { outbox in
            // A held queue is due for the others when its hold runs out.
            outbox.heads.map { head in max(head.nextAttempt, outbox.holds[head.owner]?.until ?? .distantPast) }.min()
        }
    }

    public func claimOutbox(of owner: UserID, holder: String, until: Date, now: Date) async throws -> Bool {
        outboxState.withLock { outbox in
            if let hold = outbox.holds[owner], hold.holder != holder, hold.until > now { return false }
            outbox.holds[owner] = (holder, until)
            return true
        }
    }

    public func releaseOutbox(of owner: UserID, holder: String) async throws {
        outboxState.withLock { outbox in
            if outbox.holds[owner]?.holder == holder { outbox.holds[owner] = nil }
        }
    }

    public func retryWaitingOutbox(at now: Date) async throws -> Int {
        outboxState.withLock { outbox in
            var count = 0
            for (id, item) in outbox.items where item.isQueued && item.attempts > 0 && item.nextAttempt > now {
                outbox.items[id]?.nextAttempt = now
                count += 1
            }
            return count
        }
    }

    public func releaseOutboxHolds(except holder: String) async throws {
        outboxState.withLock { outbox in outbox.holds = outbox.holds.filter { $0.value.holder == holder } }
    }

    public func outboxUsage(of owner: UserID?) async throws -> OutboxUsage {
        outboxState.withLock { outbox in
            let items = outbox.items.values.filter { owner == nil || $0.owner == owner }
            return OutboxUsage(
                count: items.count, bytes: items.reduce(0) { $0 + $1.size }, oldest: items.filter(\.isQueued).map(\.acceptedAt).min(),
                failed: items.count { !$0.isQueued }, failedBytes: items.filter { !$0.isQueued }.reduce(0) { $0 + $1.size })
        }
    }

    public func failedOutboxFiles(of owner: UserID?, failedBefore: Date?, limit: Int) async throws -> [FailedOutboxFiles] {
        outboxState.withLock { outbox in
            outbox.items.values
                .filter { item in
                    !item.isQueued && !item.files.isEmpty && (owner == nil || item.owner == owner) && (failedBefore.map { item.nextAttempt < $0 } ?? true)
                }
                .sorted { $0.id < $1.id }.prefix(max(0, limit))
                .map { FailedOutboxFiles(id: $0.id, owner: $0.owner, bytes: $0.files.reduce(0) { $0 + $1.bytes.count }) }
        }
    }

    public func dropFailedOutboxFiles(_ id: Snowflake) async throws -> Bool {
        outboxState.withLock { outbox in
            guard let kept = outbox.items[id], !kept.isQueued, !kept.files.isEmpty else { return false }
            outbox.items[id]?.files = []
            return true
        }
    }
}
