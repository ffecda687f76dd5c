import Foundation
import Synchronization
import ThreadDeskCore

/// Webhook deliveries in memory.
struct MemoryWebhooks {
    /// In the order recorded.
    var deliveries: [WebhookDelivery] = []
    /// By delivery id: who holds it, until when.
    var leases: [String: (holder: String, until: Date)] = [:]
    var off: [String: WebhookOff] = [:]

    /// The first delivery of each queue (one owner's deliveries to one hook), in the order recorded.
    var heads: [WebhookDelivery] {
        var seen: Set<String> = []
        return deliveries.filter { seen.insert($0.hook + "\u{0}" + $0.owner.rawValue).inserted }
    }

    mutating func append(_ new: [WebhookDelivery]) {
        let known = Set(deliveries.map(\.id))
        deliveries += new.filter { !known.contains($0.id) }
    }
}

extension MemoryStore {
    /// Within a user's transaction (`UserContext.webhookEvents`).
    func enqueueWebhooksNow(_ deliveries: [WebhookDelivery]) {
        guard !deliveries.isEmpty else { return }
        webhooks.withLock { $0.append(deliveries) }
    }

    public func enqueueWebhooks(_ deliveries: [WebhookDelivery]) async throws {
        enqueueWebhooksNow(deliveries)
    }

    public func claimWebhooks(now: Date, until: Date, holder: String, limit: Int, excluding: Set<String>) async throws -> [WebhookDelivery] {
        webhooks.withLock { state in
            let due = state.heads.filter { head in
                !excluding.contains(head.hook) && head.nextAttempt <= now && (state.leases[head.id].map { $0.until <= now } ?? true)
            }.sorted { $0.nextAttempt < $1.nextAttempt }.prefix(max(0, limit))
            for delivery in due { state.leases[delivery.id] = (holder, until) }
            return Array(due)
        }
    }

    public func finishWebhook(_ id: String) async throws {
        webhooks.withLock { state in
            state.deliveries.removeAll { $0.id == id }
            state.leases[id] = nil
        }
    }

    public func retryWebhook(_ id: String, attempts: Int, nextAttempt: Date) async throws {
        webhooks.withLock { state in
            guard let index = state.deliveries.firstIndex(where: { $0.id == id }) else { return }
            (state.deliveries[index].attempts, state.deliveries[index].nextAttempt) = (attempts, nextAttempt)
            state.leases[id] = nil
        }
    }

    public func nextWebhookDue() async throws -> Date? {
        webhooks.withLock { state in
            state.heads.map { head in max(head.nextAttempt, state.leases[head.id]?.until ?? .distantPast) }.min()
        }
    }

    public func webhookUsage() async throws -> WebhookUsage {
        webhooks.withLock { WebhookUsage(count: $0.deliveries.count, oldest: $0.deliveries.map(\.createdAt).min()) }
    }

    public func releaseWebhookLeases(except holder: String) async throws {
        webhooks.withLock { $0.leases = $0.leases.filter { $0.value.holder == holder } }
    }

    public func turnWebhookOff(_ hook: WebhookOff) async throws -> Int {
        webhooks.withLock { state in
            if state.off[hook.hook] == nil { state.off[hook.hook] = hook }
            let before = state.deliveries.count
            state.deliveries.removeAll { $0.hook == hook.hook }
            state.leases = state.leases.filter { lease in state.deliveries.contains { $0.id == lease.key } }
            return before - state.deliveries.count
        }
    }

    public func webhooksOff() async throws -> [WebhookOff] {
        webhooks.withLock { $0.off.values.sorted { ($0.since, $0.hook) < ($1.since, $1.hook) } }
    }

    public func turnWebhookOn(_ hook: String) async throws {
        webhooks.withLock { $0.off[hook] = nil }
    }

    public func pendingWebhooks(of owner: UserID?) async throws -> [WebhookDelivery] {
        webhooks.withLock { state in state.deliveries.filter { owner == nil || $0.owner == owner } }
    }

    /// Erasure: the user's deliveries not sent yet go with the rest of their data.
    func eraseWebhooks(of owner: UserID) {
        webhooks.withLock { state in
            state.deliveries.removeAll { $0.owner == owner }
            state.leases = state.leases.filter { lease in state.deliveries.contains { $0.id == lease.key } }
        }
    }
}
