import Deadlines
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

/// Records what an app's webhooks report: one delivery per webhook of the app that takes the
/// event's type, its body fixed now (the same bytes and `id` on every retry). Inside a user's
/// transaction the deliveries commit with what they report (`UserContext.webhookEvents`); outside
/// one they are kept at once (the caller holds the user's lock, so they queue in the user's order).
/// Either way the delivery wakes once they are in the store.
struct WebhookEvents: Sendable {
    let catalog: AppCatalog
    let store: any WebhookRecords
    /// Woken once deliveries are in the store (after the commit, for those of a transaction:
    /// `UserSerializer` signals it).
    let recorded: WakeSignal
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// Whether any app has a webhook (nothing is encoded for a deployment without one).
    var isOn: Bool { catalog.apps.contains { !$0.webhooks.isEmpty } }

    /// Records an event in `context`, committed with it when the transaction's body returns (a body
    /// that throws records nothing, like the messages it would have accepted).
    /// - Parameters:
    ///   - type: What happened.
    ///   - app: The app whose webhooks hear of it (the owner's app, as a rule).
    ///   - owner: The user it is about: one user's deliveries to one webhook go in the order recorded.
    ///   - data: The body's `data` (no note's content may ever be in it).
    ///   - date: When it happened (the body's `createdAt`).
    func record(
        _ type: WebhookEventType, app: AppID, owner: UserID, data: some Encodable & Sendable, at date: Date, in context: inout UserContext
    ) {
        context.webhookEvents += deliveries(type, app: app, owner: owner, data: data, at: date)
    }

    /// Records an event outside a user's transaction, kept before this returns. The caller holds
    /// the user's lock (or the event has no order to keep among the user's). A store failure is
    /// logged and counted, not thrown: what it reports has happened already.
    func record(_ type: WebhookEventType, app: AppID, owner: UserID, data: some Encodable & Sendable, at date: Date) async {
        await keep(deliveries(type, app: app, owner: owner, data: data, at: date))
    }

    /// Keeps deliveries made outside a transaction, and wakes their delivery.
    func keep(_ made: [WebhookDelivery]) async {
        guard !made.isEmpty else { return }
        do {
            try await store.enqueueWebhooks(made)
            recorded.signal()
        } catch {
            metrics.webhooks.lost.increment(by: Int64(made.count))
            logger.error("Webhook deliveries could not be kept; the events are lost", metadata: ["count": "\(made.count)", "error": "\(error)"])
        }
    }

    /// One delivery per webhook of `app` that takes `type`.
    func deliveries(_ type: WebhookEventType, app: AppID, owner: UserID, data: some Encodable & Sendable, at date: Date) -> [WebhookDelivery] {
        guard let settings = catalog[app] else { return [] }
        return settings.webhooks.filter { $0.events.contains(type) }.compactMap { target in
            let id = WebhookEnvelope.newID()
            guard let body = WebhookEnvelope.encode(id: id, type: type, createdAt: date, app: app, data: data) else {
                logger.error("A webhook body could not be encoded", metadata: ["type": "\(type.rawValue)"])
                return nil
            }
            return WebhookDelivery(id: id, hook: target.key(app: app), app: app, owner: owner, type: type.rawValue, body: body, createdAt: date)
        }
    }
}
