/// `text/event-stream` as chat-completion providers send it, read incrementally: bytes go in as
/// the network delivers them, cut anywhere; whole events come out. Lines end with LF, CR or CRLF
/// (a CRLF split across two pieces too); `:` lines are comments (keep-alives); several `data`
/// lines of one event join with newlines; `data: [DONE]` is the end OpenAI-compatible streams
/// promise. `id` and `retry` mean nothing to a completion and are skipped. A line, or an event's
/// data, longer than `maxLineBytes` fails the stream: a hostile provider cannot grow it without
/// bound.
public struct ServerSentEventLines: Sendable {
    public enum Event: Sendable, Hashable {
        /// An event's data, and its `event:` name when it gave one.
        case data(String, name: String?)
        /// `data: [DONE]`.
        case done
    }

    public enum Failure: Error, Sendable, Hashable {
        case lineTooLong
        case eventTooLarge
    }

    public let maxLineBytes: Int

    private var line: [UInt8] = []
    /// The last byte was a CR: an LF right after it ends no second line.
    private var afterCR = false
    private var atStart = true
    /// The event being read: its data lines joined by LF, and its name.
    private var data: [UInt8] = []
    private var hasData = false
    private var name: String?
    /// Once failed, always failed: the rest of a stream cut mid-line means nothing.
    private var failure: Failure?

    public init(maxLineBytes: Int = 1 << 20) {
        self.maxLineBytes = maxLineBytes
    }

    /// Reads the next bytes; returns the events they completed.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(Failure) -> [Event] {
        if let failure { throw failure }
        var events: [Event] = []
        for byte in bytes {
            let wasCR = afterCR
            afterCR = byte == 0x0D
            switch byte {
            case 0x0A where wasCR:
                continue
            case 0x0A, 0x0D:
                try endLine(into: &events)
            default:
                if line.count >= maxLineBytes { throw fail(.lineTooLong) }
                line.append(byte)
            }
        }
        return events
    }

    /// The stream ended: a last line or event left without its blank line still counts (lenient
    /// with servers that close right after `data: [DONE]`).
    public mutating func finish() throws(Failure) -> [Event] {
        if let failure { throw failure }
        var events: [Event] = []
        if !line.isEmpty { try endLine(into: &events) }
        if let event = dispatch() { events.append(event) }
        return events
    }

    private mutating func fail(_ failure: Failure) -> Failure {
        self.failure = failure
        line = []
        data = []
        return failure
    }

    private mutating func endLine(into events: inout [Event]) throws(Failure) {
        defer { line.removeAll(keepingCapacity: true) }
        var bytes = line[...]
        if atStart {
            atStart = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty {
            if let event = dispatch() { events.append(event) }
            return
        }
        let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
        if colon == bytes.startIndex { return }
        var value = bytes[colon...].dropFirst()
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch String(decoding: bytes[..<colon], as: UTF8.self) {
        case "data":
            if data.count + value.count + (hasData ? 1 : 0) > maxLineBytes { throw fail(.eventTooLarge) }
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        case "event":
            name = String(decoding: value, as: UTF8.self)
        default:
            break
        }
    }

    private mutating func dispatch() -> Event? {
        defer {
            data.removeAll(keepingCapacity: true)
            hasData = false
            name = nil
        }
        guard hasData else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        if text.trimmingWhitespace == "[DONE]" { return .done }
        return .data(text, name: name)
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        let trimmed = drop { $0.isWhitespace }
        return trimmed.dropLast(trimmed.reversed().prefix { $0.isWhitespace }.count)
    }
}
