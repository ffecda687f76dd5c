/// The `code` (or, lacking one, the `type`) of a provider's error answer. Extensible like
/// `APNsReason`: a code a provider adds arrives as itself (compare it with
/// `AssistErrorCode(rawValue:)`), and naming one breaks no `switch`. An answer that names none
/// (Ollama's `{"error": "…"}`) is `http_<status>`.
public struct AssistErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let invalidAPIKey = AssistErrorCode(rawValue: "invalid_api_key")
    public static let modelNotFound = AssistErrorCode(rawValue: "model_not_found")
    public static let contextLengthExceeded = AssistErrorCode(rawValue: "context_length_exceeded")
    public static let rateLimitExceeded = AssistErrorCode(rawValue: "rate_limit_exceeded")
    /// OpenAI's 429 for an account out of credit: no wait helps, so it is a refusal.
    public static let insufficientQuota = AssistErrorCode(rawValue: "insufficient_quota")
    public static let invalidRequest = AssistErrorCode(rawValue: "invalid_request_error")

    /// What an answer that names no code is given.
    public static func status(_ status: Int) -> AssistErrorCode { AssistErrorCode(rawValue: "http_\(status)") }

    public var description: String { rawValue }
}
