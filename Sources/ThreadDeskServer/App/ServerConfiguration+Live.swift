import Foundation

/// The event streams' variables: their pace, their number, what they relay.
extension ServerConfiguration {
    /// `LIVE_*`, `TYPING_INTERVAL_SECONDS`, `READ_RECEIPT_*`.
    mutating func readLive(_ value: (String) -> String?, problem: inout Problem) {
        if let keepAlive = problem.seconds("LIVE_KEEPALIVE_SECONDS", atLeast: 0.05, in: value) { live.keepAlive = keepAlive }
        if let timeout = problem.seconds("LIVE_WRITE_TIMEOUT_SECONDS", atLeast: 0.1, in: value) { live.writeTimeout = timeout }
        if let duration = problem.seconds("LIVE_MAX_STREAM_SECONDS", atLeast: 1, in: value) { live.maxStreamDuration = duration }
        if let text = value("LIVE_MAX_STREAMS") {
            if let count = Int(text), count >= 1 { live.maxStreams = count } else { problem.invalid.append("LIVE_MAX_STREAMS (1 or more)") }
        }
        if let text = value("LIVE_OPENING_AT_ONCE") {
            if text == "off" {
                live.openingAtOnce = nil
            } else if let count = Int(text), count >= 1 {
                live.openingAtOnce = count
            } else {
                problem.invalid.append("LIVE_OPENING_AT_ONCE (1 or more, or off)")
            }
        }
        if let text = value("LIVE_OPENING_QUEUE") {
            if let count = Int(text), count >= 0 { live.openingQueue = count } else { problem.invalid.append("LIVE_OPENING_QUEUE (0 or more)") }
        }
        if let text = value("LIVE_STREAMS_PER_ADDRESS") {
            if let count = Int(text), count >= 1 { live.streamsPerAddress = count } else { problem.invalid.append("LIVE_STREAMS_PER_ADDRESS (1 or more)") }
        }
        if let interval = problem.seconds("TYPING_INTERVAL_SECONDS", atLeast: 1, in: value) { live.typingInterval = interval }
        if let emoji = value("READ_RECEIPT_EMOJI") {
            if emoji == "none" {
                live.readReceiptEmoji = nil
            } else if emoji.count == 1, emoji.unicodeScalars.contains(where: { $0.properties.isEmoji && $0.value > 0xFF }) {
                live.readReceiptEmoji = emoji
            } else {
                problem.invalid.append("READ_RECEIPT_EMOJI (one emoji, or none)")
            }
        }
        if let delay = problem.seconds("READ_RECEIPT_DELAY_SECONDS", atLeast: 0.05, in: value) { live.readReceiptDelay = delay }
    }
}
