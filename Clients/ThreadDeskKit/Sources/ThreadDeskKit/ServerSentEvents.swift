import Foundation

/// One event of a `text/event-stream`.
public struct ServerSentEvent: Sendable, Hashable {
    /// The stream's last event id once this event was dispatched (ids carry over, as the
    /// specification has it), nil when the stream never sent one.
    public var id: String?
    /// `message` when the event named none.
    public var name: String
    public var data: String
    /// A `retry:` the server asked for, in milliseconds, if this event came with one.
    public var retry: Int?

    public init(id: String?, name: String, data: String, retry: Int? = nil) {
        self.id = id
        self.name = name
        self.data = data
        self.retry = retry
    }
}

/// The `text/event-stream` format (WHATWG HTML, "Server-sent events"), read incrementally:
/// bytes go in as the network delivers them, in pieces of any size; whole events come out.
/// Lines end with CRLF, LF or CR (also when a CRLF is split across two pieces); comments are
/// ignored; `data` lines join with newlines; an `id` with NUL is ignored; a leading BOM is
/// skipped. A line longer than `maxLineBytes` ends the stream with an error instead of growing
/// without bound.
public struct ServerSentEventParser: Sendable {
    public enum Failure: Error, Equatable {
        case lineTooLong
    }

    public let maxLineBytes: Int
    /// The id the next reconnection sends as `Last-Event-ID`.
    public private(set) var lastEventID: String?
    /// The latest `retry:` value, in milliseconds.
    public private(set) var retry: Int?

    private var line: [UInt8] = []
    private var skipLF = false
    private var sawFirstBytes = false
    private var data: [String] = []
    private var hasData = false
    private var name = ""
    private var eventRetry: Int?

    public init(maxLineBytes: Int = 1 << 20, lastEventID: String? = nil) {
        self.maxLineBytes = maxLineBytes
        self.lastEventID = lastEventID
    }

    /// Feeds the next bytes of the stream; returns the events they completed.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(Failure) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if skipLF {
                skipLF = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A:
                if let event = endLine() { events.append(event) }
            case 0x0D:
                skipLF = true
                if let event = endLine() { events.append(event) }
            default:
                guard line.count < maxLineBytes else { throw .lineTooLong }
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> ServerSentEvent? {
        var bytes = line[...]
        line.removeAll(keepingCapacity: true)
        if !sawFirstBytes {
            sawFirstBytes = true
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        guard !bytes.isEmpty else { return dispatch() }
        if bytes.first == UInt8(ascii: ":") { return nil }
        let field: String
        var value: Substring
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: bytes[..<colon], as: UTF8.self)
            var rest = bytes[(colon + 1)...]
            if rest.first == UInt8(ascii: " ") { rest = rest.dropFirst() }
            value = Substring(String(decoding: rest, as: UTF8.self))
        } else {
            field = String(decoding: bytes, as: UTF8.self)
            value = ""
        }
        switch field {
        case "event": name = String(value)
        case "data":
            data.append(String(value))
            hasData = true
        case "id":
            if !value.contains(Character("\u{0}")) { lastEventID = String(value) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }), let milliseconds = Int(value) {
                retry = milliseconds
                eventRetry = milliseconds
            }
        default: break
        }
        value = ""
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            data.removeAll()
            hasData = false
            name = ""
            eventRetry = nil
        }
        guard hasData else { return nil }
        return ServerSentEvent(id: lastEventID, name: name.isEmpty ? "message" : name, data: data.joined(separator: "\n"), retry: eventRetry)
    }
}
