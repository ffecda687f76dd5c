import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Reading a completion: a stream of chunks, or one JSON body (also when a stream was asked for
/// and the provider answered whole).
extension AssistClient {
    struct Answer: Sendable {
        var text: String
        var finishReason: String?
        var usage: WireUsage?
    }

    func readCompletion<C>(_ response: HTTPClientResponse, progress: BodyProgress<C>) async -> Result<Answer, Problem> {
        let limit = configuration.maxAnswerBytes
        if (response.headers.first(name: "content-type") ?? "").lowercased().contains("text/event-stream") {
            progress.streamBegan()
            return await Self.readStream(response.body, limit: limit, progress: progress)
        }
        let body: Data
        switch await Self.collect(response.body, limit: limit) {
        case .failure(let problem): return .failure(problem)
        case .success(let data): body = data
        }
        if let whole = Self.decodeCompletion(body) {
            return .success(Answer(text: whole.text, finishReason: whole.finishReason, usage: whole.usage))
        }
        // A stream under another content type.
        if body.drop(while: { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }).starts(with: Array("data:".utf8)) {
            var stream = CompletionStream(maxTextBytes: limit)
            if let failure = stream.feed(body) ?? stream.finish() { return .failure(.final(failure)) }
            return stream.done ? .success(stream.answer) : .failure(.later(.cutStream))
        }
        if (try? JSONDecoder().decode(ErrorEnvelope.self, from: body)) != nil {
            return .failure(.final(.malformed("a 200 carrying an error (\(Self.errorCode(status: 200, body: body)))")))
        }
        return .failure(.final(.malformed("the answer is not a completion")))
    }

    /// Reads chunks as they come until `[DONE]`; a stream that ends or breaks before it was cut.
    /// A little of what follows `[DONE]` is read too, so the connection can serve again.
    static func readStream<C>(_ body: HTTPClientResponse.Body, limit: Int, progress: BodyProgress<C>) async -> Result<Answer, Problem> {
        var stream = CompletionStream(maxTextBytes: limit)
        var afterDone = 0
        do {
            for try await buffer in body {
                progress.moved()
                if stream.done {
                    afterDone += buffer.readableBytes
                    if afterDone > errorBodyLimit { break }
                    continue
                }
                if let failure = stream.feed(buffer.readableBytesView) { return .failure(.final(failure)) }
            }
        } catch {
            guard stream.done else { return .failure(.later(.cutStream)) }
        }
        if !stream.done, let failure = stream.finish() { return .failure(.final(failure)) }
        return stream.done ? .success(stream.answer) : .failure(.later(.cutStream))
    }
}

/// The chunks of a streamed completion, added up: text from each `delta.content`, the last
/// `finish_reason`, and the usage chunk. Pure, so tests and the fuzzer feed it bytes directly.
struct CompletionStream {
    private var lines = ServerSentEventLines()
    private(set) var text = ""
    private(set) var finishReason: String?
    private(set) var usage: AssistClient.WireUsage?
    /// `[DONE]` came: the stream is whole.
    private(set) var done = false
    let maxTextBytes: Int

    init(maxTextBytes: Int) { self.maxTextBytes = maxTextBytes }

    var answer: AssistClient.Answer { .init(text: text, finishReason: finishReason, usage: usage) }

    /// Reads the next bytes; the failure (always `malformed`) when they are not a completion's.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> AssistFailure? {
        guard !done else { return nil }
        do {
            return take(try lines.feed(bytes))
        } catch {
            return .malformed("a stream line or event is longer than \(lines.maxLineBytes) bytes")
        }
    }

    /// The stream ended: what it left without a blank line still counts.
    mutating func finish() -> AssistFailure? {
        guard !done else { return nil }
        do {
            return take(try lines.finish())
        } catch {
            return .malformed("a stream line or event is longer than \(lines.maxLineBytes) bytes")
        }
    }

    private mutating func take(_ events: [ServerSentEventLines.Event]) -> AssistFailure? {
        for event in events where !done {
            guard case .data(let json, _) = event else {
                done = true
                continue
            }
            guard let chunk = try? JSONDecoder().decode(AssistClient.WireChunk.self, from: Data(json.utf8)) else {
                return .malformed("a stream chunk is not JSON")
            }
            if chunk.error != nil {
                let code = AssistClient.errorCode(status: 200, body: Data(json.utf8))
                return .malformed("the stream carried an error (\(code))")
            }
            guard chunk.choices != nil || chunk.usage != nil else { return .malformed("a stream chunk has neither choices nor usage") }
            if let usage = chunk.usage { self.usage = usage }
            guard let choice = chunk.choices?.first else { continue }
            if let piece = choice.delta?.content {
                guard text.utf8.count + piece.utf8.count <= maxTextBytes else {
                    return .malformed("the streamed text is longer than \(maxTextBytes) bytes")
                }
                text += piece
            }
            if let reason = choice.finish_reason { finishReason = reason }
        }
        return nil
    }
}
