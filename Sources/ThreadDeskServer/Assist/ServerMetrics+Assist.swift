import Prometheus
import ThreadDeskCore

/// The assistant's series: what each call came to, what it cost, how long it took.
extension ServerMetrics {
    static let assistOutcomes = [
        "ok", "timeout", "rate_limited", "server_error", "refused_provider", "malformed", "cut_stream", "unreachable", "refused_budget_app",
        "refused_budget_user", "refused_budget_network", "refused_budget_new_users", "refused_leak", "empty", "store_unavailable",
    ]

    /// Every purpose and outcome at 0, so a dashboard sees the series before the first failure.
    func registerAssistSeries() {
        for purpose in AssistPurpose.allCases {
            for outcome in Self.assistOutcomes { assistCounter(purpose: purpose, outcome: outcome).increment(by: Int64(0)) }
        }
    }

    private func assistCounter(purpose: AssistPurpose, outcome: String) -> Counter {
        registry.counter(
            "threaddesk_assist_requests_total", labels: [("purpose", purpose.rawValue), ("outcome", outcome)],
            help: "Requests for the assistant's text, by what they came to")
    }

    func assist(purpose: AssistPurpose, outcome: String, duration: Duration? = nil) {
        assistCounter(purpose: purpose, outcome: outcome).increment()
        if let duration {
            registry.durationHistogram(
                "threaddesk_assist_duration_seconds", buckets: [.milliseconds(250), .seconds(1), .seconds(3), .seconds(10), .seconds(30), .seconds(60)],
                help: "How long the provider took to answer, retries included"
            ).record(duration)
        }
    }

    func assistTokens(prompt: Int, completion: Int, retries: Int, app: AppID) {
        let labels = labelsApps ? [("app", app.rawValue)] : []
        registry.counter("threaddesk_assist_tokens_total", labels: labels + [("kind", "prompt")], help: "Tokens the assistant's provider counted (or we estimated)")
            .increment(by: Int64(prompt))
        registry.counter("threaddesk_assist_tokens_total", labels: labels + [("kind", "completion")], help: "Tokens the assistant's provider counted (or we estimated)")
            .increment(by: Int64(completion))
        if retries > 0 {
            registry.counter("threaddesk_assist_retries_total", help: "Attempts the provider needed past the first").increment(by: Int64(retries))
        }
    }
}
