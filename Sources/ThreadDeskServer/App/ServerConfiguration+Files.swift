import ThreadDeskCore

/// The files' variables: what a message may carry, and what the outbox holds.
extension ServerConfiguration {
    /// `ATTACHMENT_*`, `OUTBOX_*`.
    mutating func readFiles(_ value: (String) -> String?, problem: inout Problem) {
        if let bytes = problem.mebibytes("ATTACHMENT_MAX_MIB", in: value) { attachments.maxFileBytes = bytes }
        if let text = value("OUTBOX_MAX_MIB") {
            if let number = Int(text), (1...1_048_576).contains(number) { outbox.maxBytes = number * 1024 * 1024 } else { problem.invalid.append("OUTBOX_MAX_MIB (1 to 1048576)") }
        }
        if let bytes = problem.mebibytes("OUTBOX_USER_MAX_MIB", in: value) { outbox.maxBytesPerUser = bytes }
        if let text = value("OUTBOX_FAILED_KEEP_DAYS") {
            if let days = Int(text), (1...3650).contains(days) { outbox.failedKeep = .seconds(days * 86_400) } else { problem.invalid.append("OUTBOX_FAILED_KEEP_DAYS (1 to 3650)") }
        }
        if let text = value("OUTBOX_USER_MAX_MESSAGES") {
            if let count = Int(text), (1...100_000).contains(count) { outbox.maxMessagesPerUser = count } else { problem.invalid.append("OUTBOX_USER_MAX_MESSAGES (1 to 100000)") }
        }
        if let bytes = problem.mebibytes("ATTACHMENT_MAX_TOTAL_MIB", in: value) { attachments.maxTotalBytes = bytes }
        if let types = value("ATTACHMENT_TYPES") {
            let list = types.split(separator: ",").map { AttachmentRules.mediaType(String($0)) }.filter { !$0.isEmpty }
            if !list.isEmpty, list.allSatisfy({ $0.split(separator: "/").count == 2 }) {
                attachments.allowedTypes = list
            } else {
                problem.invalid.append("ATTACHMENT_TYPES (media types separated by commas, e.g. image/png,image/*)")
            }
        }
    }
}
