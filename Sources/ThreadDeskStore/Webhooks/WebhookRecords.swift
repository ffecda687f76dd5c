import Foundation
import ThreadDeskCore

/// Webhook deliveries waiting to go out (issue 60): recorded with what they report (in the user's
/// transaction, `UserContext.webhookEvents`, where there is one), delivered by any replica, in
/// order per queue (one user's deliveries to one webhook), each leased to one holder at a time.
public protocol WebhookRecords: Sendable {
    /// Keeps `deliveries`, in this order, outside a user's transaction (the caller holds the user's
    /// lock, so they queue behind what the user's earlier transactions recorded).
    func enqueueWebhooks(_ deliveries: [WebhookDelivery]) async throws

    /// At most `limit` deliveries due at `now`, each the first of its queue, none leased to a live
    /// holder, none for a hook in `excluding` (the caller's busy or resting ones); each is leased
    /// to `holder` until `until` (the caller's send must end before).
    func claimWebhooks(now: Date, until: Date, holder: String, limit: Int, excluding: Set<String>) async throws -> [WebhookDelivery]

    /// Removes a delivery: answered 2xx, given up, or its webhook turned off.
    func finishWebhook(_ id: String) async throws

    /// A failed attempt: the delivery waits until `nextAttempt` (its queue behind it), lease let go.
    func retryWebhook(_ id: String, attempts: Int, nextAttempt: Date) async throws

    /// The earliest moment a queue's first delivery is due: its next attempt, or its lease's end.
    func nextWebhookDue() async throws -> Date?

    /// What waits, for the metrics.
    func webhookUsage() async throws -> WebhookUsage

    /// Lets go every lease but `holder`'s: a store one process serves (SQLite) has no other holder
    /// alive at start, only the process before it, killed mid-send.
    func releaseWebhookLeases(except holder: String) async throws

    /// The webhook `hook` answered 410: it is off (kept, for the doctor), and what waits for it is
    /// dropped. Returns how many deliveries were dropped.
    func turnWebhookOff(_ hook: WebhookOff) async throws -> Int

    /// The webhooks turned off, oldest first.
    func webhooksOff() async throws -> [WebhookOff]

    /// Turns `hook` back on (`threaddesk admin`, tests).
    func turnWebhookOn(_ hook: String) async throws

    /// The deliveries waiting for `owner` (all users' when nil), oldest first (tests, erasure checks).
    func pendingWebhooks(of owner: UserID?) async throws -> [WebhookDelivery]
}

/// One event for one webhook, as it leaves: its body is fixed when it is recorded, so every retry
/// sends the same bytes with the same `id` (only the signature's time is new).
public struct WebhookDelivery: Sendable, Hashable {
    /// The delivery's id, the body's `id`: the receiver's key against a delivery seen twice.
    public var id: String
    /// Which webhook it goes to (`WebhookTarget.key`).
    public var hook: String
    public var app: AppID
    /// The user the event is about: one user's deliveries to one webhook go in the order recorded.
    public var owner: UserID
    /// The event's type (`message.created`, …).
    public var type: String
    /// The JSON body, exactly as it is signed and sent.
    public var body: Data
    public var createdAt: Date
    /// Tries that failed.
    public var attempts: Int
    /// Not tried before this moment (a backoff).
    public var nextAttempt: Date

    public init(
        id: String, hook: String, app: AppID, owner: UserID, type: String, body: Data, createdAt: Date, attempts: Int = 0, nextAttempt: Date? = nil
    ) {
        (self.id, self.hook, self.app, self.owner, self.type, self.body) = (id, hook, app, owner, type, body)
        (self.createdAt, self.attempts, self.nextAttempt) = (createdAt, attempts, nextAttempt ?? createdAt)
    }
}

/// A webhook its receiver turned off (410 Gone), and when.
public struct WebhookOff: Sendable, Hashable {
    public var hook: String
    public var app: AppID
    /// The receiver's host, for the doctor (never the path or credentials).
    public var host: String
    public var since: Date

    public init(hook: String, app: AppID, host: String, since: Date) {
        (self.hook, self.app, self.host, self.since) = (hook, app, host, since)
    }
}

/// What waits to go out: how many deliveries, and since when the oldest was recorded.
public struct WebhookUsage: Sendable, Hashable {
    public var count: Int
    public var oldest: Date?

    public init(count: Int = 0, oldest: Date? = nil) {
        (self.count, self.oldest) = (count, oldest)
    }
}
