import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// Streamed answers: server-sent events, one `data:` line per chunk, ending in `data: [DONE]`.
extension AssistEmulator {
    static let done = "data: [DONE]\n\n"

    static func event(_ json: Data) -> String { "data: " + String(decoding: json, as: UTF8.self) + "\n\n" }

    /// The role first, then the content in pieces of `chunkCharacters`, then the finish reason;
    /// with `include_usage` a chunk without choices carries the usage. `cutAfter` chunks in, the
    /// connection closes with no `[DONE]`.
    func stream(_ reply: Reply, content: String, finish: String, usage: Usage, cutAfter: Int?) -> Response {
        func chunk(_ delta: Wire.Chunk.Delta?, finish: String? = nil, usage: Usage? = nil) -> String {
            let choices = delta.map { [Wire.Chunk.Choice(delta: $0, finish_reason: finish)] } ?? []
            return Self.event(
                Wire.encode(
                    Wire.Chunk(id: reply.id, created: reply.created, model: reply.chat.model, choices: choices, usage: usage.map(Wire.Usage.init))))
        }
        var events = [chunk(.init(role: "assistant", content: ""))]
        events += Self.pieces(of: content, size: configuration.chunkCharacters).map { chunk(.init(content: $0)) }
        events.append(chunk(.init(), finish: finish))
        if reply.chat.includeUsage { events.append(chunk(nil, usage: usage)) }
        guard let cutAfter else { return Self.eventStream(events + [Self.done]) }
        return Self.eventStream(Array(events.prefix(cutAfter)), thenCut: true)
    }

    static func pieces(of text: String, size: Int) -> [String] {
        var pieces: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            pieces.append(String(rest.prefix(max(1, size))))
            rest = rest.dropFirst(max(1, size))
        }
        return pieces
    }

    /// A `text/event-stream` answer writing each event as it goes.
    static func eventStream(_ events: [String], thenCut: Bool = false) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                for event in events { try await writer.write(ByteBuffer(string: event)) }
                if thenCut { throw ConnectionCut() }
                try await writer.finish(nil)
            })
    }
}
