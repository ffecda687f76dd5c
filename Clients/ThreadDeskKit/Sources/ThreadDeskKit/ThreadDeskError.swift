import Foundation

/// What went wrong talking to ThreadDesk: its ``kind-swift.property``, and what is known about it.
///
/// Extensible like `ErrorCode`: a kind a later version of the SDK adds never breaks an app's
/// build, because there is no exhaustive `switch` to break. Match on the kind, with a `default`:
///
/// ```swift
/// switch error.kind {
/// case .server where error.code == .messageTooLong: showTooLong()
/// case .pending: showSending()          // error.idempotencyKey: its key in the outbox
/// case .transport: showOffline()
/// default: showError(error)
/// }
/// ```
public struct ThreadDeskError: Error, Sendable, Hashable, CustomStringConvertible {
    /// How a call failed: a name for each way this version knows, compared with `==` or in a
    /// `switch` (which needs a `default`: a later version may add one).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable {
            case server, transport, invalidResponse, noSession, pending, invalidInput
        }

        let base: Base

        private init(_ base: Base) { self.base = base }

        /// The server answered with an error: its ``ThreadDeskError/status``, its
        /// ``ThreadDeskError/code``, its ``ThreadDeskError/message``, and how long it asked to
        /// wait (``ThreadDeskError/retryAfter``: 429, 503).
        public static let server = Kind(.server)
        /// No answer: no network, a timeout, a connection cut. Safe to retry.
        public static let transport = Kind(.transport)
        /// An answer that is not what the API documents.
        public static let invalidResponse = Kind(.invalidResponse)
        /// Call ``ThreadDeskClient/open(installation:)`` first.
        public static let noSession = Kind(.noSession)
        /// The message could not be confirmed yet; it waits in the outbox under
        /// ``ThreadDeskError/idempotencyKey`` and goes out (once) with the next
        /// ``ThreadDeskClient/flushOutbox()``.
        public static let pending = Kind(.pending)
        /// Refused before anything was sent: the input breaks a rule of the API (a rating's score
        /// outside 1...5, say). ``ThreadDeskError/code`` names the rule as the server would
        /// (`ErrorCode.invalidRating`); ``ThreadDeskError/message`` says what was wrong.
        public static let invalidInput = Kind(.invalidInput)

        public var description: String {
            switch base {
            case .server: "server"
            case .transport: "transport"
            case .invalidResponse: "invalidResponse"
            case .noSession: "noSession"
            case .pending: "pending"
            case .invalidInput: "invalidInput"
            }
        }
    }

    /// How the call failed.
    public let kind: Kind
    /// The HTTP status the server answered with; nil when it did not answer.
    public let status: Int?
    /// The server's error code, if the server answered (a code this SDK has no name for arrives
    /// as itself: `ErrorCode.isKnown` is false); for input refused before it was sent
    /// (``Kind-swift.struct/invalidInput``), the code the server would have answered with.
    public let code: ErrorCode?
    /// For people (logs, developers), not for matching: the server's message, why no answer came,
    /// what was wrong with the answer, or, for a message not confirmed yet, its last attempt's failure.
    public let message: String
    /// The wait the server asked for in seconds (429, 503), if any.
    public let retryAfter: TimeInterval?
    /// The outbox key of a message not confirmed yet (``Kind-swift.struct/pending``); nil for
    /// other kinds.
    public let idempotencyKey: String?

    private init(
        _ kind: Kind, message: String, status: Int? = nil, code: ErrorCode? = nil, retryAfter: TimeInterval? = nil,
        idempotencyKey: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.status = status
        self.code = code
        self.retryAfter = retryAfter
        self.idempotencyKey = idempotencyKey
    }

    /// The server answered `status` with `code` and `message`, asking to wait `retryAfter` seconds.
    public static func server(status: Int, code: ErrorCode, message: String, retryAfter: TimeInterval?) -> ThreadDeskError {
        ThreadDeskError(.server, message: message, status: status, code: code, retryAfter: retryAfter)
    }

    /// No answer came, for the reason given.
    public static func transport(_ reason: String) -> ThreadDeskError {
        ThreadDeskError(.transport, message: reason)
    }

    /// The answer was not what the API documents, for the reason given.
    public static func invalidResponse(_ reason: String) -> ThreadDeskError {
        ThreadDeskError(.invalidResponse, message: reason)
    }

    /// No session: ``ThreadDeskClient/open(installation:)`` comes first.
    public static let noSession = ThreadDeskError(.noSession, message: "call open() first")

    /// The message under `idempotencyKey` waits in the outbox, its last attempt failed with `lastError`.
    public static func pending(idempotencyKey: String, lastError: String) -> ThreadDeskError {
        ThreadDeskError(.pending, message: lastError, idempotencyKey: idempotencyKey)
    }

    /// `code`'s rule refused the input before it was sent, for the reason given.
    public static func invalidInput(_ code: ErrorCode, _ reason: String) -> ThreadDeskError {
        ThreadDeskError(.invalidInput, message: reason, code: code)
    }

    /// Whether the server answered `status`, with `code` when one is given:
    /// `catch where error.isServer(status: 401, code: .unauthorized)`.
    public func isServer(status: Int, code: ErrorCode? = nil) -> Bool {
        kind == .server && self.status == status && (code == nil || self.code == code)
    }

    public var description: String {
        switch kind.base {
        case .server: "ThreadDesk \(status.map(String.init) ?? "?") \(code?.rawValue ?? "?"): \(message)"
        case .transport: "ThreadDesk unreachable: \(message)"
        case .invalidResponse: "Unexpected answer from ThreadDesk: \(message)"
        case .noSession: "No ThreadDesk session; call open() first."
        case .pending: "Message \(idempotencyKey ?? "?") not confirmed yet (\(message)); it stays in the outbox."
        case .invalidInput: "Not sent to ThreadDesk: \(message)"
        }
    }

    /// Whether the same request may succeed later: no answer, or the server asked to come back.
    public var isRetryable: Bool {
        switch kind.base {
        case .transport: true
        case .server: status.map { [408, 429, 500, 502, 503, 504].contains($0) } == true || code == .retryInProgress
        case .invalidResponse, .noSession, .pending, .invalidInput: false
        }
    }
}
