/// How much the outbox may keep and how it retries (`OUTBOX_*`).
public struct OutboxSettings: Sendable {
    /// What may wait for Discord in the whole deployment (texts and files), `OUTBOX_MAX_MIB`:
    /// what is still to be delivered, never what Discord refused.
    public var maxBytes = 1024 * 1024 * 1024
    /// What one user may have waiting, `OUTBOX_USER_MAX_MIB`: one device cannot fill the outbox.
    /// Their refused messages are capped at as much again on their own (the oldest files go first).
    public var maxBytesPerUser = 64 * 1024 * 1024
    /// How long a refused message keeps its files, `OUTBOX_FAILED_KEEP_DAYS` (its text stays).
    public var failedKeep: Duration = .seconds(7 * 86_400)
    /// How often refused messages' files past `failedKeep` are looked for.
    public var failedSweep: Duration = .seconds(3600)
    /// How many messages one user may have waiting, `OUTBOX_USER_MAX_MESSAGES`.
    public var maxMessagesPerUser = 200
    /// A delivery that failed for a passing reason is tried again after this, doubling up to `retryCap`.
    public var retryBase: Duration = .seconds(1)
    public var retryCap: Duration = .seconds(60)
    /// Users whose queues are delivered at the same time; one user's messages go one after the other.
    public var concurrency = 16
    /// How long a replica holds a user's queue per post (renewed before each) before another may
    /// take it over: what a replica that dies mid-delivery costs its users. A hold that lapses
    /// during a slow post is safe (the nonce answers a second attempt with the first post; the
    /// first holder's writes are fenced), so it need not cover the longest post.
    public var hold: Duration = .seconds(30)
    /// At shutdown, how long (real time) the deliveries under way may take before they are cancelled.
    public var drain: Duration = .seconds(10)

    public init() {}
}
