// Fuzz target: the SDK's server-sent events parser (bytes from the network, cut anywhere) and the
// error codes it reads from answers. The same bytes fed whole or in two pieces give the same events.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvents(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    var whole = ServerSentEventParser(maxLineBytes: 512)
    let all: [ServerSentEvent]
    do {
        all = try whole.feed(bytes)
    } catch {
        // Only a line past the limit may be refused.
        precondition(bytes.count > 512, "refused a short input")
        return 0
    }
    for event in all {
        // Counted in scalars: an invalid byte reads as U+FFFD, three bytes of UTF-8 for one of input.
        precondition(event.data.unicodeScalars.count <= bytes.count && event.name.unicodeScalars.count <= 512, "an event larger than its input")
        precondition(!(event.id?.contains(Character("\u{0}")) ?? false), "an id with NUL")
    }
    let cut = count == 0 ? 0 : Int(bytes[0]) % (count + 1)
    var split = ServerSentEventParser(maxLineBytes: 512)
    let pieces = (try? split.feed(bytes[..<cut])).map { first in first + ((try? split.feed(bytes[cut...])) ?? []) }
    precondition(pieces == all, "cutting the bytes changed the events")
    precondition(split.lastEventID == whole.lastEventID && split.retry == whole.retry, "cutting the bytes changed the state")
    let code = ErrorCode(rawValue: String(decoding: bytes.prefix(40), as: UTF8.self))
    precondition(ErrorCode(rawValue: code.rawValue) == code, "an error code that does not round-trip")
    return 0
}
