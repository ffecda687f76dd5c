import HTTPTypes
import Prometheus
import ThreadDeskCore

/// The server's Prometheus metrics, served at `GET /metrics`. Each application gets its own
/// registry, so tests (and the sandbox) can run several side by side.
public struct ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let storeLatency: DurationHistogram
    let discordInvalidRequests: Gauge
    /// The event streams and what they carry (`Live`).
    let live: LiveSeries
    /// The outbox's depth and wait.
    let outbox: OutboxSeries
    /// Files: sent with messages, uploaded, served.
    let files: FileSeries
    /// What keeps the mirror whole: the gateway's events, the catch-ups, the forum's room.
    let mirror: MirrorSeries
    /// Crash reports: taken in, symbolicated, answered by rules.
    let crashes: CrashSeries
    /// Signed webhooks: depth, wait, failures.
    let webhooks: WebhookSeries
    /// Conversations closed, reminders, ratings.
    let lifecycle: LifecycleSeries
    /// Whether the series that are worth telling apart per app (messages, pushes, the outbox's
    /// failures) carry an `app` label: a deployment of several apps (`APPS_FILE`). A metric keeps
    /// one set of labels for good, so this is decided once, as the server is built.
    var labelsApps = false

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        storeLatency = registry.durationHistogram(
            "threaddesk_store_duration_seconds",
            buckets: [.milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(2), .seconds(10)],
            help: "Time inside withUser, Discord calls included")
        discordInvalidRequests = registry.gauge(
            "threaddesk_discord_invalid_requests_10m",
            help: "401, 403 and 429 answers from Discord in the last 10 minutes (Discord bans at 10,000)")
        live = LiveSeries(registry)
        outbox = OutboxSeries(registry)
        files = FileSeries(registry)
        mirror = MirrorSeries(registry)
        crashes = CrashSeries(registry)
        webhooks = WebhookSeries(registry)
        lifecycle = LifecycleSeries(registry)
    }

    func request(route: String, method: String, status: Int) {
        registry.counter(
            "threaddesk_http_requests_total",
            labels: [("route", route), ("method", method), ("status", String(status))],
            help: "HTTP requests answered").increment()
    }

    /// A stream's opening turned away without a turn: `full` (`LIVE_OPENING_QUEUE` waiting already)
    /// or `waited` (no turn within its wait).
    func openingRefused(_ reason: String) {
        registry.counter(
            "threaddesk_live_openings_refused_total", labels: [("reason", reason)],
            help: "/v1/events openings answered 503 busy for want of a turn, by reason").increment()
    }

    /// A request answered 503, by the answer's error code (`busy`, `timeout`, `store_unavailable`,
    /// …): the status alone does not tell a full queue from a store away.
    func unavailable(route: String, code: String) {
        registry.counter(
            "threaddesk_http_unavailable_total", labels: [("route", route), ("code", code)],
            help: "HTTP requests answered 503, by error code").increment()
    }

    /// A message Discord refused for good (`code`: Discord's error code), or one that failed for
    /// a reason that passes and waits for another try (`code` `passing`).
    func outboxFailure(code: String, app: AppID) {
        registry.counter(
            "threaddesk_outbox_failures_total", labels: appLabel(app) + [("code", code)], help: "Outbox deliveries that failed, by Discord's code"
        ).increment()
    }

    /// The message series of every app at 0 from the start (one series without an app label on a
    /// deployment of one app, as before there were several), so a dashboard sees them before the
    /// first message.
    func registerMessageSeries(apps: [AppID]) {
        for app in apps {
            _ = registry.counter("threaddesk_messages_accepted_total", labels: appLabel(app), help: "User messages accepted into the outbox")
            _ = registry.counter("threaddesk_messages_posted_total", labels: appLabel(app), help: "User messages posted to Discord")
        }
    }

    /// A user message accepted into the outbox.
    func accepted(app: AppID) {
        registry.counter("threaddesk_messages_accepted_total", labels: appLabel(app), help: "User messages accepted into the outbox").increment()
    }

    /// A user message the outbox posted to Discord.
    func posted(app: AppID) {
        registry.counter("threaddesk_messages_posted_total", labels: appLabel(app), help: "User messages posted to Discord").increment()
    }

    private func appLabel(_ app: AppID) -> [(String, String)] { labelsApps ? [("app", app.rawValue)] : [] }

    func quotaRefused(_ quota: String) {
        registry.counter("threaddesk_quota_refusals_total", labels: [("quota", quota)], help: "Requests refused by a quota")
            .increment()
    }

    /// A user's data erased: `request` (DELETE /v1/me), `admin` (threaddesk admin), `retention`.
    func usersErased(reason: String) {
        registry.counter("threaddesk_users_erased_total", labels: [("reason", reason)], help: "Users whose data was erased")
            .increment()
    }

    /// An App Attest check ended: `step` `attestation` (a new key), `assertion` (a signed
    /// request) or `token` (a session's token where only attested devices' are served), `outcome`
    /// `accepted`, `key_untrusted` or the error code it was refused with.
    func appAttest(step: String, outcome: String) {
        registry.counter(
            "threaddesk_app_attest_total", labels: [("step", step), ("outcome", outcome)],
            help: "App Attest attestations and assertions, by outcome").increment()
    }

    /// A round of the retention job ended: `done`, or `failed` (a user it could not erase, or the store).
    func retentionRound(outcome: String) {
        registry.counter(
            "threaddesk_retention_rounds_total", labels: [("outcome", outcome)],
            help: "Rounds of the retention job that looked for inactive users").increment()
    }

    /// A page of a user's data export served.
    func exportPage() {
        registry.counter("threaddesk_export_pages_total", help: "Pages of user data exports served").increment()
    }

    func pushes(outcome: String, app: AppID) {
        registry.counter("threaddesk_pushes_total", labels: appLabel(app) + [("outcome", outcome)], help: "Push notifications by outcome")
            .increment()
    }

    /// Every HTTP attempt the Discord client makes; `status` 0 when no answer came.
    func discord(route: String, status: Int?) {
        registry.counter(
            "threaddesk_discord_requests_total", labels: [("route", route), ("status", String(status ?? 0))],
            help: "Requests sent to Discord").increment()
        if status == 429 {
            registry.counter("threaddesk_discord_rate_limited_total", help: "429 answers from Discord").increment()
        }
    }
}

/// swift-prometheus names a metric by a descriptor of parts; ours are written whole
/// (`threaddesk_…_total`), so each is one part.
extension PrometheusCollectorRegistry {
    func counter(_ name: String, labels: [(String, String)] = [], help: String) -> Counter {
        makeCounter(descriptor: .init(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    func gauge(_ name: String, help: String) -> Gauge {
        makeGauge(descriptor: .init(metricName: name, unitName: "", helpText: help))
    }

    func durationHistogram(_ name: String, buckets: [Duration], help: String) -> DurationHistogram {
        makeDurationHistogram(descriptor: .init(metricName: name, unitName: "", helpText: help), buckets: buckets)
    }
}
