import Prometheus

/// The fixed series of `ServerMetrics`, by the part of the server that writes them: each part
/// finds its own under one name (`metrics.live.events`), and the list of series reads by area.
extension ServerMetrics {
    /// The `/v1/events` streams: open, opening, dropped, what they carry.
    struct LiveSeries: Sendable {
        let streams: Gauge
        /// Connections whose task is running: one per connection, except an event stream's once its
        /// handler holds it (`EventStreamHandler`).
        let connectionTasks: Gauge
        let opening: Gauge
        let waitingToOpen: Gauge
        let dropped: Counter
        let events: Counter
        let typingSent: Counter
        let typingDropped: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            streams = registry.gauge("threaddesk_live_streams", help: "Open /v1/events streams in this process")
            connectionTasks = registry.gauge(
                "threaddesk_http_connection_tasks", help: "HTTP connections of the public server whose task runs (an open event stream has none)")
            opening = registry.gauge(
                "threaddesk_live_streams_opening", help: "/v1/events streams being opened, each holding a turn (LIVE_OPENING_AT_ONCE), in this process")
            waitingToOpen = registry.gauge(
                "threaddesk_live_streams_waiting_to_open", help: "/v1/events streams waiting for a turn to open (LIVE_OPENING_QUEUE at most) in this process")
            dropped = registry.counter("threaddesk_live_streams_dropped_total", help: "Event streams closed because their client stopped reading")
            events = registry.counter("threaddesk_live_events_total", help: "Events written to /v1/events streams")
            typingSent = registry.counter("threaddesk_typing_sent_total", help: "Typing indicators sent to Discord")
            typingDropped = registry.counter(
                "threaddesk_typing_dropped_total", help: "Typing indicators dropped: too many waiting for Discord, or too late to show")
        }
    }

    /// The messages accepted and not yet in Discord.
    struct OutboxSeries: Sendable {
        let depth: Gauge
        let oldest: Gauge

        init(_ registry: PrometheusCollectorRegistry) {
            depth = registry.gauge("threaddesk_outbox_depth", help: "User messages accepted and not yet in Discord (failed ones included)")
            oldest = registry.gauge(
                "threaddesk_outbox_oldest_seconds", help: "How long the oldest message of the outbox has waited for Discord (0 when none)")
        }
    }

    /// Files users send (with messages, as diagnostics) and the attachments apps download.
    struct FileSeries: Sendable {
        let uploaded: Counter
        let receiving: Gauge
        let diagnosticsUploaded: Counter
        let attachmentsServed: Counter
        let attachmentURLsRefreshed: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            uploaded = registry.counter("threaddesk_files_uploaded_total", help: "Files users sent with their messages")
            receiving = registry.gauge("threaddesk_uploads_receiving", help: "Message files whose bodies are being received")
            diagnosticsUploaded = registry.counter("threaddesk_diagnostics_uploaded_total", help: "Diagnostics files posted")
            attachmentsServed = registry.counter("threaddesk_attachments_served_total", help: "Attachment downloads served to apps")
            attachmentURLsRefreshed = registry.counter("threaddesk_attachment_urls_refreshed_total", help: "Expired Discord CDN URLs signed anew")
        }
    }

    /// What keeps the mirror whole: the gateway's events, the REST catch-ups, room in the forum.
    struct MirrorSeries: Sendable {
        let gatewayEventsSkipped: Counter
        let catchUps: Counter
        let catchUpFailures: Counter
        let threadsArchived: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            gatewayEventsSkipped = registry.counter(
                "threaddesk_gateway_events_skipped_total", help: "Events from the gateway daemon of a type or shape this server does not know")
            catchUps = registry.counter("threaddesk_catch_ups_total", help: "REST catch-ups run, failed ones included")
            catchUpFailures = registry.counter("threaddesk_catch_up_failures_total", help: "REST catch-ups that failed part-way")
            threadsArchived = registry.counter("threaddesk_threads_archived_total", help: "Idle threads archived because the forum was full (160006)")
        }
    }

    struct CrashSeries: Sendable {
        let reported: Counter
        let regressions: Counter
        let answered: Counter
        let symbolicatedLater: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            reported = registry.counter("threaddesk_crash_reports_total", help: "Crash and hang diagnostics taken in")
            regressions = registry.counter("threaddesk_crash_regressions_total", help: "Reports of a group marked fixed, from the fixed version or later")
            answered = registry.counter("threaddesk_crash_answers_total", help: "Users answered by a rule (fixed in a version)")
            symbolicatedLater = registry.counter("threaddesk_crash_reports_resymbolicated_total", help: "Reports symbolicated again after their dSYM came")
        }
    }
}
