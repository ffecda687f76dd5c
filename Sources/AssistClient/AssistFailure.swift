/// Why a completion did not come. The retryable ones (`rateLimited`, `server`, `cutStream`,
/// `unreachable`, an attempt's `timeout`) are what was left when the attempts or the time ran out.
public enum AssistFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call's deadline passed (or an attempt's, with no time left to try again).
    case timeout
    /// 429; `retryAfter` is what the provider asked for, when it said.
    case rateLimited(retryAfter: Duration?)
    /// 5xx, or a status that is neither an answer nor a refusal.
    case server(status: Int)
    /// 4xx: the request, the key or the model was refused; trying again would not help.
    case refused(status: Int, code: AssistErrorCode)
    /// A 200 that is not a completion (no choices, not JSON, too large); the text says what.
    case malformed(String)
    /// The answer stopped before its end: the connection closed, or a stream went quiet.
    case cutStream
    /// No answer at all: the connection could not be made or broke before the status.
    case unreachable(String)

    public var description: String {
        switch self {
        case .timeout: "the provider did not answer in time"
        case .rateLimited(let retryAfter?): "the provider is rate limiting (retry after \(retryAfter))"
        case .rateLimited(nil): "the provider is rate limiting"
        case .server(let status): "the provider failed (HTTP \(status))"
        case .refused(let status, let code): "the provider refused the request (HTTP \(status), \(code))"
        case .malformed(let what): "the provider's answer is malformed: \(what)"
        case .cutStream: "the provider's answer was cut off"
        case .unreachable(let what): "the provider is unreachable: \(what)"
        }
    }
}
