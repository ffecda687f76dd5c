import Foundation

/// The chat-completions wire format, read leniently: OpenAI, llama.cpp, vLLM and Ollama differ in
/// what they leave out, so every field a completion can do without is optional.
extension AssistClient {
    struct ChatBody: Encodable {
        struct StreamOptions: Encodable { var include_usage: Bool }

        var model: String
        var messages: [AssistMessage]
        var max_tokens: Int
        var temperature: Double?
        var stream: Bool
        var stream_options: StreamOptions?

        init(_ request: AssistRequest, model: String, stream: Bool) {
            self.model = model
            self.messages = request.messages
            self.max_tokens = request.maxTokens
            self.temperature = request.temperature
            self.stream = stream
            self.stream_options = stream ? StreamOptions(include_usage: true) : nil
        }
    }

    struct WireUsage: Decodable {
        var prompt_tokens: Int?
        var completion_tokens: Int?
    }

    /// A whole answer: `choices[0].message.content`.
    struct WireCompletion: Decodable {
        struct Choice: Decodable {
            struct Message: Decodable { var content: String? }
            var message: Message?
            var finish_reason: String?
        }
        var choices: [Choice]?
        var usage: WireUsage?
    }

    /// One chunk of a stream: `choices[0].delta.content`; the usage chunk has no choices.
    struct WireChunk: Decodable {
        struct Choice: Decodable {
            struct Delta: Decodable { var content: String? }
            var delta: Delta?
            var finish_reason: String?
        }
        var choices: [Choice]?
        var usage: WireUsage?
        var error: WireError?
    }

    /// `{"error": {"message", "type", "code"}}`, or Ollama's `{"error": "…"}`.
    struct WireError: Decodable {
        var type: String?
        var code: String?

        init(from decoder: any Decoder) throws {
            if let container = try? decoder.singleValueContainer(), (try? container.decode(String.self)) != nil { return }
            let detail = try decoder.container(keyedBy: CodingKeys.self)
            type = try? detail.decodeIfPresent(String.self, forKey: .type)
            // Some providers give the code as a number.
            if let text = try? detail.decodeIfPresent(String.self, forKey: .code) {
                code = text
            } else if let number = try? detail.decodeIfPresent(Int.self, forKey: .code) {
                code = String(number)
            }
        }

        enum CodingKeys: String, CodingKey { case type, code }
    }

    struct ErrorEnvelope: Decodable { var error: WireError }

    struct ModelList: Decodable {
        struct Model: Decodable { var id: String }
        var data: [Model]
    }

    /// The code of an error answer: its `code`, else its `type`, else `http_<status>`.
    static func errorCode(status: Int, body: Data) -> AssistErrorCode {
        let error = (try? JSONDecoder().decode(ErrorEnvelope.self, from: body))?.error
        guard let name = error?.code ?? error?.type, !name.isEmpty else { return .status(status) }
        return AssistErrorCode(rawValue: String(name.prefix(100)))
    }

    /// The usage a provider reported, each number it left out estimated.
    static func usage(_ wire: WireUsage?, prompt: [AssistMessage], text: String) -> AssistUsage {
        let reported = (wire?.prompt_tokens, wire?.completion_tokens)
        return AssistUsage(
            prompt: reported.0 ?? AssistUsage.estimatedTokens(in: prompt),
            completion: reported.1 ?? AssistUsage.estimatedTokens(in: text),
            estimated: reported.0 == nil || reported.1 == nil)
    }

    /// A whole answer's text, finish reason and reported usage; nil when it has no choice.
    static func decodeCompletion(_ body: Data) -> (text: String, finishReason: String?, usage: WireUsage?)? {
        guard let completion = try? JSONDecoder().decode(WireCompletion.self, from: body),
            let choice = completion.choices?.first
        else { return nil }
        return (choice.message?.content ?? "", choice.finish_reason, completion.usage)
    }

    /// How long a provider asks us to wait: `retry-after-ms` (OpenAI's), else `Retry-After` in
    /// seconds or as an HTTP date. Nil when absent or unreadable.
    static func retryAfter(milliseconds: String?, header: String?, now: Date) -> Duration? {
        if let milliseconds, let value = Double(milliseconds.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 {
            return .milliseconds(Int64(min(value, 86_400_000).rounded(.up)))
        }
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return nil }
        if let seconds = Double(header) {
            guard seconds.isFinite, seconds >= 0 else { return nil }
            return .milliseconds(Int64((min(seconds, 86_400) * 1000).rounded(.up)))
        }
        for format in httpDateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: header) {
                let seconds = min(max(0, date.timeIntervalSince(now)), 86_400)
                return .milliseconds(Int64((seconds * 1000).rounded(.up)))
            }
        }
        return nil
    }

    /// IMF-fixdate, RFC 850 and asctime, as RFC 9110 asks a recipient to accept.
    private static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]
}
