import Foundation

/// How webhooks are delivered (the receivers themselves are each app's: `AppSettings.webhooks`).
public struct WebhookSettings: Sendable {
    /// One request's deadline, connection included (`WEBHOOK_TIMEOUT_SECONDS`): a slow receiver
    /// holds its delivery this long at most.
    public var timeout: Duration = .seconds(10)
    /// Requests under way at once in one process.
    public var concurrency = 16
    /// Requests under way at once to one webhook: a slow receiver keeps the others' turns free.
    public var perWebhook = 4
    /// The first retry's wait; each next one waits twice as long, up to `maxBackoff`.
    public var firstBackoff: Duration = .seconds(10)
    public var maxBackoff: Duration = .seconds(3600)
    /// A delivery still failing this long after its event is given up (counted).
    public var giveUpAfter: Duration = .seconds(3 * 86_400)
    /// How long the loop sleeps at most before it looks again (another replica may have recorded
    /// events, or died holding some).
    public var idlePoll: Duration = .seconds(5)
    /// At shutdown, how long the requests under way may take to finish before they are cancelled
    /// (their deliveries are sent again later, with the same id).
    public var drain: Duration = .seconds(5)

    public init() {}

    /// The wait before attempt `attempts + 1`, after `attempts` failures.
    func backoff(after attempts: Int) -> Duration {
        let doublings = min(max(0, attempts - 1), 30)
        return min(maxBackoff, firstBackoff * (1 << doublings))
    }

    /// How long a claim is leased: the request's deadline and a margin for the store.
    var lease: Duration { timeout + .seconds(30) }
}
