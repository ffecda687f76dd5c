import Foundation

/// A chat-completions request as the emulator reads it: lenient where providers are (extra
/// fields are ignored), strict where they refuse (roles, types, an empty conversation).
struct ChatRequest: Sendable {
    var model: String
    var messages: [AssistEmulator.RecordedRequest.Message]
    var maxTokens: Int?
    var temperature: Double?
    var stream: Bool
    var includeUsage: Bool

    static let roles: Set<String> = ["system", "user", "assistant"]
    static let maxTokensLimit = 1 << 20

    /// The fields read, before their values are checked.
    private struct Body: Decodable {
        struct Message: Decodable {
            var role: String?
            var content: Content?
        }
        struct StreamOptions: Decodable {
            var include_usage: Bool?
        }
        var model: String?
        var messages: [Message]?
        var max_tokens: Int?
        /// The newer name of `max_tokens`, which the `openai` client also sends.
        var max_completion_tokens: Int?
        var temperature: Double?
        var stream: Bool?
        var stream_options: StreamOptions?
    }

    /// A message's content: text, or a list of text parts.
    private enum Content: Decodable {
        case text(String)
        case parts([Part])

        struct Part: Decodable {
            var type: String
            var text: String?
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .parts(try container.decode([Part].self))
            }
        }
    }

    /// What was readable, for the record, even when the request is then refused.
    struct Partial: Sendable {
        var model: String?
        var stream = false
    }

    static func peek(_ data: Data) -> Partial {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return Partial() }
        return Partial(model: object["model"] as? String, stream: (object["stream"] as? Bool) ?? false)
    }

    init(data: Data) throws(APIFailure) {
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: data)
        } catch let DecodingError.typeMismatch(_, context) {
            throw .invalidRequest("Invalid type for '\(Self.path(context.codingPath))'.", param: Self.path(context.codingPath))
        } catch let DecodingError.valueNotFound(_, context) {
            throw .invalidRequest("Invalid value for '\(Self.path(context.codingPath))'.", param: Self.path(context.codingPath))
        } catch {
            throw .invalidRequest("The request body is not valid JSON.", param: nil)
        }
        guard let model = body.model, !model.isEmpty else {
            throw .invalidRequest("You must provide a model parameter.", param: "model", code: "missing_required_parameter")
        }
        guard let messages = body.messages, !messages.isEmpty else {
            throw .invalidRequest("'messages' must hold at least one message.", param: "messages")
        }
        var read: [AssistEmulator.RecordedRequest.Message] = []
        for (index, message) in messages.enumerated() {
            guard let role = message.role, Self.roles.contains(role) else {
                throw .invalidRequest(
                    "Invalid value for 'messages[\(index)].role': expected system, user or assistant.", param: "messages[\(index)].role")
            }
            switch message.content {
            case .text(let text):
                read.append(.init(role: role, content: text))
            case .parts(let parts):
                guard parts.allSatisfy({ $0.type == "text" && $0.text != nil }) else {
                    throw .invalidRequest("Only text parts are supported in 'messages[\(index)].content'.", param: "messages[\(index)].content")
                }
                read.append(.init(role: role, content: parts.compactMap(\.text).joined()))
            case nil:
                throw .invalidRequest("Missing 'messages[\(index)].content'.", param: "messages[\(index)].content")
            }
        }
        let maxTokens = body.max_completion_tokens ?? body.max_tokens
        if let maxTokens, !(1...Self.maxTokensLimit).contains(maxTokens) {
            throw .invalidRequest("'max_tokens' must be between 1 and \(Self.maxTokensLimit).", param: "max_tokens")
        }
        if let temperature = body.temperature, !(0...2).contains(temperature) {
            throw .invalidRequest("'temperature' must be between 0 and 2.", param: "temperature")
        }
        self.model = model
        self.messages = read
        self.maxTokens = maxTokens
        self.temperature = body.temperature
        self.stream = body.stream ?? false
        self.includeUsage = body.stream_options?.include_usage ?? false
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.reduce("") { path, key in
            if let index = key.intValue { return path + "[\(index)]" }
            return path.isEmpty ? key.stringValue : path + "." + key.stringValue
        }
    }
}
