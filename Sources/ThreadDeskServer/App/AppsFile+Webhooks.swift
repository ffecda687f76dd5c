import Foundation

/// An app's `webhooks` list read from `APPS_FILE`: `[{"url", "secretFile", "events"}]`.
extension WebhookTarget {
    static let fields: Set<String> = ["url", "secretFile", "events"]

    /// Reads the list, naming each problem through `problem` (prefixed `webhooks[i].`).
    static func read(_ list: Any, relativeTo directory: URL, problem: (String) -> Void) -> [WebhookTarget] {
        guard let entries = list as? [Any] else {
            problem("webhooks (a list: [{\"url\": \"https://…\", \"secretFile\": \"…\", \"events\": [\"message.created\"]}])")
            return []
        }
        var targets: [WebhookTarget] = []
        for (index, entry) in entries.enumerated() {
            let label = "webhooks[\(index)]"
            guard let fields = entry as? [String: Any] else {
                problem("\(label) (an object: {\"url\", \"secretFile\", \"events\"})")
                continue
            }
            for key in fields.keys.sorted() where !Self.fields.contains(key) { problem("unknown field \"\(label).\(key)\"") }
            let url = (fields["url"] as? String).flatMap(isReceiverURL)
            if url == nil { problem("\(label).url (an http or https URL)") }
            var secret: String?
            if let path = fields["secretFile"] as? String, !path.isEmpty {
                let file = path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path)
                switch readSecret(file) {
                case .success(let read): secret = read
                case .failure(let reason): problem("\(label).secretFile (\(reason))")
                }
            } else {
                problem("\(label).secretFile missing (a file holding the signing secret)")
            }
            var events = Set(WebhookEventType.allCases)
            if let names = fields["events"] {
                if let names = names as? [String], let read = WebhookEventType.list(names.joined(separator: ",")) {
                    events = read
                } else {
                    problem("\(label).events (a list of event types: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")), or [\"*\"])")
                }
            }
            if let url, let secret { targets.append(WebhookTarget(url: url, secret: secret, events: events)) }
        }
        if Set(targets.map(\.url)).count < targets.count { problem("webhooks (the same url twice)") }
        return targets
    }
}
