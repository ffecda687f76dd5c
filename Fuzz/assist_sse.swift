// Fuzz target: the assist client's server-sent events reader (a provider's stream, cut anywhere
// by the network). The same bytes fed whole, in three pieces or byte by byte give the same events
// (or the same failure); no event's data is larger than the limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAssistSSE(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let whole = read([bytes[...]])
    if case .success(let events) = whole {
        for case .data(let data, let name) in events {
            // Counted in scalars: an invalid byte reads as U+FFFD, three bytes of UTF-8 for one of input.
            precondition(data.unicodeScalars.count <= limit && (name?.unicodeScalars.count ?? 0) <= limit, "an event larger than the limit")
        }
    } else {
        precondition(count > limit, "refused an input shorter than the limit")
    }
    let first = count == 0 ? 0 : Int(bytes[0]) % (count + 1)
    let second = count < 2 ? count : first + Int(bytes[1]) % (count - first + 1)
    precondition(read([bytes[..<first], bytes[first..<second], bytes[second...]]) == whole, "cutting the bytes in three changed the events")
    precondition(read(bytes.map { [$0][...] }) == whole, "feeding byte by byte changed the events")
    return 0
}

private let limit = 512

private func read(_ pieces: [ArraySlice<UInt8>]) -> Result<[ServerSentEventLines.Event], ServerSentEventLines.Failure> {
    var lines = ServerSentEventLines(maxLineBytes: limit)
    var events: [ServerSentEventLines.Event] = []
    do {
        for piece in pieces { events += try lines.feed(piece) }
        events += try lines.finish()
    } catch {
        return .failure(error)
    }
    return .success(events)
}
