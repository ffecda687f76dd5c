import Deadlines
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import ServiceLifecycle
import Synchronization

/// The provider's API: `POST /v1/chat/completions` and `GET /v1/models`.
extension AssistEmulator {
    func addProviderRoutes(to router: Router<BasicRequestContext>) {
        router.post("/v1/chat/completions") { request, _ in await self.chatCompletion(request) }
        router.get("/v1/models") { request, _ in
            self.state.withLock { $0.counters.modelListings += 1 }
            if let failure = self.checkKey(request.headers[.authorization]) { return Self.response(failure) }
            let created = Int(Date().timeIntervalSince1970)
            return Self.response(json: Wire.encode(Wire.ModelList(data: self.configuration.models.map { Wire.Model(id: $0, created: created) })))
        }
        router.get("/v1/models/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            if let failure = self.checkKey(request.headers[.authorization]) { return Self.response(failure) }
            guard self.configuration.models.contains(id) else { return Self.response(.modelNotFound(id)) }
            return Self.response(json: Wire.encode(Wire.Model(id: id, created: Int(Date().timeIntervalSince1970))))
        }
    }

    private func chatCompletion(_ request: Request) async -> Response {
        let authorization = Self.authorizationSeen(request.headers[.authorization], key: configuration.apiKey)
        var record = RecordedRequest(
            id: 0, receivedAt: Date(), path: request.uri.path, authorization: authorization, model: nil, stream: false,
            includeUsage: false, maxTokens: nil, temperature: nil, messages: [], outcome: "refused", status: 0)
        let data = try? Data(buffer: await request.body.collect(upTo: configuration.maxRequestBytes))
        if let data {
            let partial = ChatRequest.peek(data)
            record.model = partial.model
            record.stream = partial.stream
        }
        let chat: ChatRequest
        do throws(APIFailure) {
            if let failure = checkKey(request.headers[.authorization]) { throw failure }
            guard let data else { throw .tooLarge(configuration.maxRequestBytes) }
            chat = try ChatRequest(data: data)
            guard configuration.models.contains(chat.model) else { throw .modelNotFound(chat.model) }
        } catch {
            record.status = error.status
            self.record(record)
            return Self.response(error)
        }
        let outcome = nextOutcome()
        record.stream = chat.stream
        record.includeUsage = chat.includeUsage
        record.maxTokens = chat.maxTokens
        record.temperature = chat.temperature
        record.messages = chat.messages
        record.outcome = outcome.name
        record.status =
            switch outcome {
            case .status(let status, _, _), .raw(let status, _, _): status
            default: 200
            }
        let id = self.record(record, fault: outcome.isFault ? outcome.name : nil)
        return await answer(chat, with: outcome, requestID: id)
    }

    private func answer(_ chat: ChatRequest, with outcome: Outcome, requestID: Int) async -> Response {
        let reply = Reply(chat: chat, requestID: requestID)
        switch outcome {
        case .rule: return complete(reply, text: Self.rule(chat))
        case .answer(let text): return complete(reply, text: text)
        case .echo: return complete(reply, text: chat.messages.map(\.content).joined(separator: "\n"))
        case .status(let status, let retryAfter, let code): return Self.response(.scripted(status, retryAfter: retryAfter, code: code))
        case .malformed: return malformed(reply)
        case .garbage:
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "<html><body><h1>502 Bad Gateway</h1></body></html>")))
        case .cutStream(let afterChunks): return complete(reply, text: Self.rule(chat), cutAfter: max(0, afterChunks))
        case .hang:
            await hold(requestID)
            return complete(reply, text: Self.rule(chat))
        case .slow(let milliseconds):
            // A slow provider, but not one that holds the emulator's own shutdown.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(milliseconds)) }
            return complete(reply, text: Self.rule(chat))
        case .raw(let status, let contentType, let body):
            return Response(
                status: .init(code: status), headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }

    /// The default answer: deterministic, so the same request always gets the same text. A user
    /// message that is ThreadDesk's JSON data gets an answer of its shape, so the sandbox shows
    /// something plausible: a translation request its texts back (marked with the language), a
    /// draft request the first help article's text; any other message its own first 200 characters.
    static func rule(_ chat: ChatRequest) -> String {
        let last = chat.messages.last { $0.role == "user" }?.content ?? ""
        let prefix = "(\(chat.model)) "
        guard let data = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any] else { return prefix + String(last.prefix(200)) }
        if let texts = data["texts"] as? [String] {
            let language = data["to"] as? String ?? "?"
            let answer = ["translations": texts.map { "[\(language)] \($0)" }]
            return (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
        if let article = (data["helpArticles"] as? [[String: Any]])?.first, let text = article["text"] as? String {
            return prefix + "Our help article “\(article["title"] as? String ?? "")” says: " + String(text.prefix(400))
        }
        if let conversation = data["conversation"] as? [[String: Any]], let said = conversation.last(where: { $0["from"] as? String == "user" })?["text"] as? String {
            return prefix + "Thanks for the details about “\(said.prefix(80))”. Which version of the app are you using?"
        }
        return prefix + String(last.prefix(200))
    }

    /// What every answer to one request shares.
    struct Reply {
        var chat: ChatRequest
        var id: String
        var created: Int

        init(chat: ChatRequest, requestID: Int) {
            self.chat = chat
            self.id = "chatcmpl-emu\(requestID)"
            self.created = Int(Date().timeIntervalSince1970)
        }
    }

    /// A completion of `text` (cut to `max_tokens`), streamed when asked; `cutAfter` breaks it off.
    private func complete(_ reply: Reply, text: String, cutAfter: Int? = nil) -> Response {
        let (content, cut) = Self.truncated(text, maxTokens: reply.chat.maxTokens)
        let usage = Usage(prompt: reply.chat.messages, completion: content)
        let finish = cut ? "length" : "stop"
        if cutAfter == nil {
            state.withLock { state in
                state.counters.completed += 1
                state.counters.promptTokens += usage.prompt
                state.counters.completionTokens += usage.completion
            }
            observers.changed()
        }
        if reply.chat.stream {
            return stream(reply, content: content, finish: finish, usage: usage, cutAfter: cutAfter)
        }
        let completion = Wire.Completion(
            id: reply.id, created: reply.created, model: reply.chat.model,
            choices: [.init(message: .init(content: content), finish_reason: finish)], usage: Wire.Usage(usage))
        let body = Wire.encode(completion)
        guard cutAfter != nil else { return Self.response(json: body) }
        // The length promised, half of it sent, then the connection closed.
        let half = ByteBuffer(data: body.prefix(body.count / 2))
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(contentLength: body.count) { writer in
                try await writer.write(half)
                throw ConnectionCut()
            })
    }

    private func malformed(_ reply: Reply) -> Response {
        guard reply.chat.stream else {
            return Self.response(
                json: Wire.encode(Wire.Choiceless(id: reply.id, object: "chat.completion", created: reply.created, model: reply.chat.model)))
        }
        let chunk = Wire.encode(Wire.Choiceless(id: reply.id, object: "chat.completion.chunk", created: reply.created, model: reply.chat.model))
        return Self.eventStream([Self.event(chunk), Self.done])
    }

    /// Thrown while writing a body, to close the connection mid-answer.
    struct ConnectionCut: Error {}

    func checkKey(_ header: String?) -> APIFailure? {
        guard configuration.apiKey != nil else { return nil }
        return Self.authorizationSeen(header, key: configuration.apiKey) == .bearer ? nil : .invalidAPIKey
    }

    static func authorizationSeen(_ header: String?, key: String?) -> AuthorizationSeen {
        guard let header else { return .absent }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .other }
        guard let key else { return .bearer }
        return parts[1] == key ? .bearer : .wrongBearer
    }

    /// Records a request and counts it; returns its id.
    @discardableResult
    func record(_ request: RecordedRequest, fault: String? = nil) -> Int {
        let id = state.withLock { state in
            var request = request
            request.id = state.nextRequestID
            state.nextRequestID += 1
            state.counters.chatRequests += 1
            if request.stream { state.counters.streamed += 1 }
            if request.outcome == "refused" { state.counters.refused[String(request.status), default: 0] += 1 }
            if let fault { state.counters.faults[fault, default: 0] += 1 }
            state.requests.append(request)
            state.recordedBytes += request.size
            // Bounded whatever clients send: the oldest records go first.
            while state.recordedBytes > configuration.maxRecordedBytes, state.requests.count > 1 {
                state.recordedBytes -= state.requests.removeFirst().size
            }
            return request.id
        }
        observers.changed()
        return id
    }

    static func response(_ failure: APIFailure) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = failure.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: .init(code: failure.status), headers: headers, body: .init(byteBuffer: ByteBuffer(data: failure.json)))
    }

    static func response(json: Data) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: json)))
    }
}

extension AssistEmulator.RecordedRequest {
    /// Roughly what it holds in memory, for the record's bound.
    var size: Int { messages.reduce(256) { $0 + $1.content.utf8.count + $1.role.utf8.count } }
}
