import Foundation
import Testing
import ThreadDeskKit

@Suite("Server-sent events parser")
struct ServerSentEventParserTests {
    private let sample = "retry: 3000\n\nid: 7\nevent: message.created\ndata: {\"id\":\"1\"}\n\n: keep-alive\n\nid: 8\nevent: unread\ndata: {\"count\":2}\n\n"

    @Test func eventsComeOutWhateverTheNetworkCutsTheBytesInto() throws {
        let bytes = Array(sample.utf8)
        var whole = ServerSentEventParser()
        let expected = try whole.feed(bytes)
        #expect(expected.map(\.name) == ["message.created", "unread"])
        #expect(expected.map(\.id) == ["7", "8"])
        #expect(expected[0].data == #"{"id":"1"}"#)
        #expect(whole.retry == 3000)
        for size in [1, 2, 3, 5, 13] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            for start in stride(from: 0, to: bytes.count, by: size) {
                events += try parser.feed(bytes[start..<min(start + size, bytes.count)])
            }
            #expect(events == expected, "pieces of \(size) bytes")
            #expect(parser.lastEventID == "8")
        }
    }

    @Test func lineEndingsCRLFAndCRAreLinesToo() throws {
        var parser = ServerSentEventParser()
        let crlf = try parser.feed(Array("event: a\r\ndata: 1\r\n\r\n".utf8))
        #expect(crlf == [ServerSentEvent(id: nil, name: "a", data: "1")])
        // A CRLF split over two pieces is one line end, not an empty line in between.
        var split = ServerSentEventParser()
        var events = try split.feed(Array("data: x\r".utf8))
        events += try split.feed(Array("\ndata: y\r\r".utf8))
        #expect(events.map(\.data) == ["x\ny"])
    }

    @Test func dataLinesJoinCommentsAndUnknownFieldsAreIgnoredAndIDsCarryOver() throws {
        var parser = ServerSentEventParser(lastEventID: "41")
        let events = try parser.feed(Array("\u{FEFF}: hello\nfoo: bar\ndata\ndata:two\ndata:  three\n\nevent: x\n\nid: 42\u{0}\ndata: z\n\n".utf8))
        #expect(events.count == 2)
        #expect(events[0] == ServerSentEvent(id: "41", name: "message", data: "\ntwo\n three"))
        // An event with no data is not dispatched; an id containing NUL is ignored.
        #expect(events[1].id == "41")
        #expect(events[1].name == "message")
    }

    @Test func anEndlessLineIsAnErrorNotUnboundedMemory() throws {
        var parser = ServerSentEventParser(maxLineBytes: 64)
        #expect(throws: ServerSentEventParser.Failure.lineTooLong) {
            _ = try parser.feed(Array(repeating: UInt8(ascii: "a"), count: 65))
        }
    }

    @Test func retryMustBeDigits() throws {
        var parser = ServerSentEventParser()
        _ = try parser.feed(Array("retry: 12a\n\nretry: 250\n\n".utf8))
        #expect(parser.retry == 250)
    }
}
