import AssistEmulator
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A real emulator on a loopback port for one test, and raw HTTP to it.
enum Harness {
    static let logger: Logger = {
        var logger = Logger(label: "assist-emulator-test")
        logger.logLevel = .error
        return logger
    }()

    @discardableResult
    static func withEmulator<T: Sendable>(
        _ configure: (inout AssistEmulator.Configuration) -> Void = { _ in },
        _ body: @Sendable (AssistEmulator, AssistHTTP) async throws -> T
    ) async throws -> T {
        var configuration = AssistEmulator.Configuration()
        configure(&configuration)
        return try await AssistEmulator.withRunning(configuration: configuration, logger: logger) { emulator in
            try await body(emulator, AssistHTTP(endpoints: await emulator.endpoints()))
        }
    }
}

/// HTTP as a provider's client speaks it, keeping everything the emulator sent, even a body cut short.
struct AssistHTTP: Sendable {
    let endpoints: AssistEmulator.Endpoints

    enum Method: String, Sendable { case GET, POST }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
        /// Why reading the body failed (the connection closed early), if it did.
        var failure: String?

        var text: String { String(decoding: body, as: UTF8.self) }

        func header(_ name: String) -> String? { headers.first(name: name) }

        func decoded<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }

        /// The `data:` payloads of a server-sent event stream, in order.
        var events: [String] {
            text.components(separatedBy: "\n\n").compactMap { event in
                event.hasPrefix("data: ") ? String(event.dropFirst("data: ".count)) : nil
            }
        }

        /// The chunks of a stream (every event but `[DONE]`).
        func chunks() throws -> [Chunk] {
            try events.filter { $0 != "[DONE]" }.map { try JSONDecoder().decode(Chunk.self, from: Data($0.utf8)) }
        }
    }

    /// `POST {baseURL}/chat/completions` with `body` as raw text.
    func complete(body: String, key: String? = nil) async throws -> Answer {
        try await send(.POST, endpoints.baseURL + "/chat/completions", body: body, key: key)
    }

    func complete(_ request: ChatBody, key: String? = nil) async throws -> Answer {
        try await complete(body: String(decoding: try JSONEncoder().encode(request), as: UTF8.self), key: key)
    }

    /// The text of a plain (not streamed) completion.
    func content(_ request: ChatBody) async throws -> String {
        try await complete(request).decoded(Completion.self).choices[0].message.content
    }

    func send(_ method: Method, _ url: String, body: String? = nil, key: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method.rawValue)
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var data = Data()
        var failure: String?
        do {
            for try await buffer in response.body { data.append(contentsOf: buffer.readableBytesView) }
        } catch {
            failure = String(describing: error)
        }
        return Answer(status: Int(response.status.code), headers: response.headers, body: data, failure: failure)
    }

    /// `path` under the control URL.
    func control(_ method: Method, _ path: String, body: String? = nil) async throws -> Answer {
        try await send(method, endpoints.controlURL + path, body: body)
    }
}

/// A request body as a client builds one.
struct ChatBody: Encodable {
    struct Message: Encodable {
        var role: String
        var content: String
    }
    struct StreamOptions: Encodable { var include_usage: Bool }

    var model = "test-model"
    var messages: [Message]
    var max_tokens: Int?
    var stream: Bool?
    var stream_options: StreamOptions?

    init(_ messages: [(String, String)], model: String = "test-model", maxTokens: Int? = nil, stream: Bool? = nil, includeUsage: Bool? = nil) {
        self.model = model
        self.messages = messages.map { Message(role: $0.0, content: $0.1) }
        self.max_tokens = maxTokens
        self.stream = stream
        self.stream_options = includeUsage.map(StreamOptions.init)
    }
}

/// What a provider answers, read as a client reads it.
struct Completion: Decodable {
    struct Choice: Decodable {
        var index: Int
        var message: Message
        var finish_reason: String?
    }
    struct Message: Decodable {
        var role: String
        var content: String
    }
    var id: String
    var object: String
    var created: Int
    var model: String
    var choices: [Choice]
    var usage: Usage
}

struct Usage: Decodable, Equatable {
    var prompt_tokens: Int
    var completion_tokens: Int
    var total_tokens: Int
}

struct Chunk: Decodable {
    struct Choice: Decodable {
        var index: Int
        var delta: Delta
        var finish_reason: String?
    }
    struct Delta: Decodable {
        var role: String?
        var content: String?
    }
    var id: String
    var object: String
    var model: String
    var choices: [Choice]?
    var usage: Usage?
}

struct ErrorBody: Decodable {
    struct Detail: Decodable {
        var message: String
        var type: String
        var param: String?
        var code: String?
    }
    var error: Detail
}
