import Foundation

/// An error as OpenAI-compatible providers answer one: the status, and
/// `{"error": {"message", "type", "param", "code"}}`.
struct APIFailure: Error, Sendable {
    var status: Int
    var message: String
    var type: String
    var param: String?
    var code: String?
    var retryAfter: Int?

    static func invalidRequest(_ message: String, param: String?, code: String? = nil) -> APIFailure {
        APIFailure(status: 400, message: message, type: "invalid_request_error", param: param, code: code)
    }

    static let invalidAPIKey = APIFailure(
        status: 401, message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key")

    static func modelNotFound(_ model: String) -> APIFailure {
        APIFailure(
            status: 404, message: "The model '\(model)' does not exist or you do not have access to it.", type: "invalid_request_error",
            param: "model", code: "model_not_found")
    }

    static func tooLarge(_ limit: Int) -> APIFailure {
        APIFailure(status: 413, message: "The request body is larger than \(limit) bytes.", type: "invalid_request_error", code: "request_too_large")
    }

    /// A scripted error: the type a provider gives that status.
    static func scripted(_ status: Int, retryAfter: Int?, code: String?) -> APIFailure {
        let (type, defaultCode, message): (String, String?, String) =
            switch status {
            case 429: ("rate_limit_error", "rate_limit_exceeded", "Rate limit reached. Try again later.")
            case 500...: ("server_error", nil, "The server had an error while processing your request.")
            default: ("invalid_request_error", nil, "The request was refused.")
            }
        return APIFailure(status: status, message: message, type: type, code: code ?? defaultCode, retryAfter: retryAfter)
    }

    var json: Data {
        struct Envelope: Encodable {
            struct Detail: Encodable {
                var message: String
                var type: String
                var param: String?
                var code: String?

                func encode(to encoder: any Encoder) throws {
                    // `param` and `code` are present as null, as providers send them.
                    var container = encoder.container(keyedBy: CodingKeys.self)
                    try container.encode(message, forKey: .message)
                    try container.encode(type, forKey: .type)
                    try container.encode(param, forKey: .param)
                    try container.encode(code, forKey: .code)
                }
                enum CodingKeys: String, CodingKey { case message, type, param, code }
            }
            var error: Detail
        }
        return Wire.encode(Envelope(error: .init(message: message, type: type, param: param, code: code)))
    }
}
