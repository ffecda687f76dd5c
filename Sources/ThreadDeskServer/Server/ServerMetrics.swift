import HTTPTypes
import Prometheus
import ThreadDeskCore

/// The server's Prometheus metrics, served at `GET /metrics`. Each application gets its own
/// registry, so tests (and the sandbox) can run several side by side.
public struct ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let storeLatency: DurationHistogram
    let filesUploaded: Counter
    let gatewayEventsSkipped: Counter
    let attachmentsServed: Counter
    let attachmentURLsRefreshed: Counter
    let diagnosticsUploaded: Counter
    let catchUps: Counter
    let catchUpFailures: Counter
    let threadsArchived: Counter
    let discordInvalidRequests: Gauge
    let liveStreams: Gauge
    /// Connections whose task is running: one per connection, except an event stream's once its
    /// handler holds it (`EventStreamHandler`).
    let connectionTasks: Gauge
    let liveStreamsOpening: Gauge
    let liveStreamsWaitingToOpen: Gauge
    let uploadsReceiving: Gauge
    let liveStreamsDropped: Counter
    let liveEvents: Counter
    let typingSent: Counter
    let typingDropped: Counter
    let outboxDepth: Gauge
    let outboxOldest: Gauge
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
        filesUploaded = registry.counter("threaddesk_files_uploaded_total", help: "Files users sent with their messages")
        gatewayEventsSkipped = registry.counter(
            "threaddesk_gateway_events_skipped_total", help: "Events from the gateway daemon of a type or shape this server does not know")
        attachmentsServed = registry.counter("threaddesk_attachments_served_total", help: "Attachment downloads served to apps")
        attachmentURLsRefreshed = registry.counter(
            "threaddesk_attachment_urls_refreshed_total", help: "Expired Discord CDN URLs signed anew")
        diagnosticsUploaded = registry.counter("threaddesk_diagnostics_uploaded_total", help: "Diagnostics files posted")
        catchUps = registry.counter("threaddesk_catch_ups_total", help: "REST catch-ups run, failed ones included")
        catchUpFailures = registry.counter("threaddesk_catch_up_failures_total", help: "REST catch-ups that failed part-way")
        discordInvalidRequests = registry.gauge(
            "threaddesk_discord_invalid_requests_10m",
            help: "401, 403 and 429 answers from Discord in the last 10 minutes (Discord bans at 10,000)")
        liveStreams = registry.gauge("threaddesk_live_streams", help: "Open /v1/events streams in this process")
        connectionTasks = registry.gauge(
            "threaddesk_http_connection_tasks", help: "HTTP connections of the public server whose task runs (an open event stream has none)")
        liveStreamsOpening = registry.gauge(
            "threaddesk_live_streams_opening", help: "/v1/events streams being opened, each holding a turn (LIVE_OPENING_AT_ONCE), in this process")
        liveStreamsWaitingToOpen = registry.gauge(
            "threaddesk_live_streams_waiting_to_open", help: "/v1/events streams waiting for a turn to open (LIVE_OPENING_QUEUE at most) in this process")
        uploadsReceiving = registry.gauge("threaddesk_uploads_receiving", help: "Message files whose bodies are being received")
        liveStreamsDropped = registry.counter(
            "threaddesk_live_streams_dropped_total", help: "Event streams closed because their client stopped reading")
        liveEvents = registry.counter("threaddesk_live_events_total", help: "Events written to /v1/events streams")
        typingSent = registry.counter("threaddesk_typing_sent_total", help: "Typing indicators sent to Discord")
        typingDropped = registry.counter(
            "threaddesk_typing_dropped_total", help: "Typing indicators dropped: too many waiting for Discord, or too late to show")
        outboxDepth = registry.gauge("threaddesk_outbox_depth", help: "User messages accepted and not yet in Discord (failed ones included)")
        outboxOldest = registry.gauge(
            "threaddesk_outbox_oldest_seconds", help: "How long the oldest message of the outbox has waited for Discord (0 when none)")
        threadsArchived = registry.counter(
            "threaddesk_threads_archived_total", help: "Idle threads archived because the forum was full (160006)")
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
