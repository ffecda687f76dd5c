import Prometheus

extension ServerMetrics {
    /// Signed webhooks: what waits, what went, what failed or was given up.
    struct WebhookSeries: Sendable {
        let depth: Gauge
        let oldest: Gauge
        let delivered: Counter
        /// Attempts that failed (the delivery waits for another, or is given up).
        let failures: Counter
        /// Deliveries given up: retried for 3 days, or their webhook turned off (410).
        let givenUp: Counter
        /// Events that could not be kept (the store failed outside a transaction).
        let lost: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            depth = registry.gauge("threaddesk_webhook_depth", help: "Webhook deliveries waiting to be sent")
            oldest = registry.gauge("threaddesk_webhook_oldest_seconds", help: "How long the oldest webhook delivery has waited (0 when none)")
            delivered = registry.counter("threaddesk_webhook_deliveries_total", help: "Webhook deliveries a receiver answered 2xx")
            failures = registry.counter("threaddesk_webhook_failures_total", help: "Webhook attempts that failed (an error, a timeout, a non-2xx answer)")
            givenUp = registry.counter("threaddesk_webhook_given_up_total", help: "Webhook deliveries given up: 3 days of retries, or the webhook turned off (410)")
            lost = registry.counter("threaddesk_webhook_lost_total", help: "Webhook events that could not be kept in the store")
        }
    }
}
