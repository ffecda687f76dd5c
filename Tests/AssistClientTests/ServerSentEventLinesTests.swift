import AssistClient
import Testing

@Suite struct ServerSentEventLinesTests {
    /// Every way lines end, comments, a BOM, a named event, several `data` lines, a field without
    /// a colon and `[DONE]`.
    static let stream = Array(
        ("\u{FEFF}: hello\r\n"
            + "data: {\"a\":1}\r\n\r\n"
            + "event: note\rdata:first\rdata:  second\r\r"
            + "id: 7\nretry: 10\ndata\n\n"
            + ": keep-alive\n\n"
            + "data: é😀\n\n"
            + "data: [DONE]\n\n").utf8)
    static let events: [ServerSentEventLines.Event] = [
        .data("{\"a\":1}", name: nil), .data("first\n second", name: "note"), .data("", name: nil), .data("é😀", name: nil), .done,
    ]

    @Test func theWholeStreamGivesItsEvents() throws {
        var lines = ServerSentEventLines()
        #expect(try lines.feed(Self.stream) + lines.finish() == Self.events)
    }

    @Test func aStreamCutAtEveryOffsetGivesTheSameEvents() throws {
        for cut in 0...Self.stream.count {
            var lines = ServerSentEventLines()
            let events = try lines.feed(Self.stream[..<cut]) + lines.feed(Self.stream[cut...]) + lines.finish()
            #expect(events == Self.events, "cut at \(cut)")
        }
    }

    @Test func aStreamFedByteByByteGivesTheSameEvents() throws {
        var lines = ServerSentEventLines()
        var events: [ServerSentEventLines.Event] = []
        for byte in Self.stream { events += try lines.feed([byte]) }
        #expect(events + (try lines.finish()) == Self.events)
    }

    @Test func theEndOfTheStreamDispatchesWhatWasLeft() throws {
        var lines = ServerSentEventLines()
        #expect(try lines.feed(Array("data: [DONE]".utf8)).isEmpty)
        #expect(try lines.finish() == [.done])
    }

    @Test func aLineOrEventPastTheLimitFailsAndStaysFailed() throws {
        var long = ServerSentEventLines(maxLineBytes: 16)
        #expect(throws: ServerSentEventLines.Failure.lineTooLong) { try long.feed(Array(("data: " + String(repeating: "x", count: 11)).utf8)) }
        #expect(throws: ServerSentEventLines.Failure.lineTooLong) { try long.feed(Array("\n\n".utf8)) }

        var large = ServerSentEventLines(maxLineBytes: 16)
        _ = try large.feed(Array("data: 0123456789\n".utf8))
        #expect(throws: ServerSentEventLines.Failure.eventTooLarge) { try large.feed(Array("data: 0123456789\n".utf8)) }

        var exact = ServerSentEventLines(maxLineBytes: 16)
        #expect(try exact.feed(Array("data: 0123456789\n\n".utf8)) == [.data("0123456789", name: nil)])
    }
}
