import Foundation

/// What went wrong talking to ThreadDesk.
public enum ThreadDeskError: Error, Sendable, CustomStringConvertible {
    /// The server answered with an error: its status, its code (a code this SDK has no name
    /// for arrives as itself: `ErrorCode.isKnown` is false), its message, and how long it asked to wait in seconds (429, 503).
    case server(status: Int, code: ErrorCode, message: String, retryAfter: TimeInterval?)
    /// No answer: no network, a timeout, a connection cut. Safe to retry.
    case transport(String)
    /// An answer that is not what the API documents.
    case invalidResponse(String)
    /// Call ``ThreadDeskClient/open(installation:)`` first.
    case noSession
    /// The message could not be confirmed yet; it waits in the outbox under this idempotency key
    /// and goes out (once) with the next ``ThreadDeskClient/flushOutbox()``.
    case pending(idempotencyKey: String, lastError: String)

    public var description: String {
        switch self {
        case .server(let status, let code, let message, _): "ThreadDesk \(status) \(code): \(message)"
        case .transport(let why): "ThreadDesk unreachable: \(why)"
        case .invalidResponse(let why): "Unexpected answer from ThreadDesk: \(why)"
        case .noSession: "No ThreadDesk session; call open() first."
        case .pending(let key, let error): "Message \(key) not confirmed yet (\(error)); it stays in the outbox."
        }
    }

    /// The server's error code, if the server answered.
    public var code: ErrorCode? {
        if case .server(_, let code, _, _) = self { return code }
        return nil
    }

    /// Whether the same request may succeed later: no answer, or the server asked to come back.
    public var isRetryable: Bool {
        switch self {
        case .transport: true
        case .server(let status, let code, _, _): [408, 429, 500, 502, 503, 504].contains(status) || code == .retryInProgress
        case .invalidResponse, .noSession, .pending: false
        }
    }

    /// The wait the server asked for, if any.
    public var retryAfter: TimeInterval? {
        if case .server(_, _, _, let retryAfter) = self { return retryAfter }
        return nil
    }
}
