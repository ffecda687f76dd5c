import Foundation

/// The webhooks' variables: the one app's receiver (`WEBHOOK_*`; with `APPS_FILE` each app names
/// its own) and how every delivery is made.
extension ServerConfiguration {
    /// `WEBHOOK_URL`, `WEBHOOK_SECRET_FILE`, `WEBHOOK_EVENTS`, `WEBHOOK_TIMEOUT_SECONDS`.
    mutating func readWebhooks(_ value: (String) -> String?, problem: inout Problem) {
        if let timeout = problem.seconds("WEBHOOK_TIMEOUT_SECONDS", atLeast: 1, in: value) { webhooks.timeout = timeout }
        let names = ["WEBHOOK_URL", "WEBHOOK_SECRET_FILE", "WEBHOOK_EVENTS"]
        if apps != nil {
            for name in names where value(name) != nil { problem.invalid.append("\(name) (set per app in APPS_FILE: webhooks)") }
            return
        }
        guard let text = value("WEBHOOK_URL") else {
            for name in names.dropFirst() where value(name) != nil { problem.invalid.append("\(name) (only with WEBHOOK_URL)") }
            return
        }
        let url = WebhookTarget.isReceiverURL(text)
        if url == nil { problem.invalid.append("WEBHOOK_URL (an http or https URL)") }
        var secret: String?
        if let path = value("WEBHOOK_SECRET_FILE") {
            switch WebhookTarget.readSecret(URL(fileURLWithPath: path)) {
            case .success(let read): secret = read
            case .failure(let reason): problem.invalid.append("WEBHOOK_SECRET_FILE (\(reason))")
            }
        } else {
            problem.missing.append("WEBHOOK_SECRET_FILE")
        }
        var events = Set(WebhookEventType.allCases)
        if let list = value("WEBHOOK_EVENTS") {
            if let read = WebhookEventType.list(list) {
                events = read
            } else {
                problem.invalid.append("WEBHOOK_EVENTS (event types separated by commas: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ",")), or *)")
            }
        }
        if let url, let secret { webhookTargets = [WebhookTarget(url: url, secret: secret, events: events)] }
    }
}
