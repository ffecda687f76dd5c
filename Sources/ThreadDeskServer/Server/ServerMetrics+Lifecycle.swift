import Prometheus
import ThreadDeskCore
import ThreadDeskStore

extension ServerMetrics {
    /// Conversations' lifecycle: closes by who closed them, reminders, ratings by score.
    struct LifecycleSeries: Sendable {
        let registry: PrometheusCollectorRegistry
        let reopened: Counter
        let scheduled: Counter
        let ratingsRequested: Counter

        init(_ registry: PrometheusCollectorRegistry) {
            self.registry = registry
            reopened = registry.counter("threaddesk_conversations_reopened_total", help: "Closed conversations an agent reopened")
            scheduled = registry.counter("threaddesk_conversation_closes_scheduled_total", help: "Closes scheduled with /close in:")
            ratingsRequested = registry.counter("threaddesk_ratings_requested_total", help: "Closed conversations that asked the user for a rating")
        }

        func closed(by closer: ConversationCloser, app: AppID) {
            registry.counter(
                "threaddesk_conversations_closed_total", labels: [("by", closer.rawValue), ("app", app.rawValue)],
                help: "Conversations closed, by who closed them (agent, scheduled, auto)").increment()
        }

        func reminders(app: AppID) {
            registry.counter("threaddesk_reminders_total", labels: [("app", app.rawValue)], help: "Reminders of users waiting for support").increment()
        }

        func rated(score: Int, app: AppID) {
            registry.counter(
                "threaddesk_ratings_total", labels: [("score", String(score)), ("app", app.rawValue)], help: "Ratings users gave, by score")
                .increment()
        }
    }
}
