import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app's side of ThreadDesk: the session, the conversation, live events, typing, read
/// state, files, diagnostics and push registration.
///
/// ```swift
/// let support = ThreadDeskClient(.standard(serverURL: url, appKey: "…"))
/// try await support.open()
/// for await event in support.events() { … }
/// try await support.send("Hello!")
/// ```
public actor ThreadDeskClient {
    public nonisolated let configuration: ThreadDeskConfiguration
    let transport: Transport
    var session: Session?
    /// Keys found lost on this device that a new session was asked for once already: never again
    /// (a retried call would otherwise attest a new key each time).
    var lostKeysReplaced: Set<String> = []
    /// The replacement of a session under way (see `replaceSession`), by the token it replaces.
    var replacing: (token: String, task: Task<Session, any Error>)?
    /// When the last typing report went out (`typing()`).
    var lastTyping: TimeInterval?
    /// The crash reporter started for this client: what it keeps goes out once a session exists.
    nonisolated let crashReports = Locked<SupportCrashReports?>(nil)
    /// The user's attributes and activity not sent yet, as last read or written (nil: not read yet).
    var userContextBacklog: UserContextBacklog?
    /// The send of the backlog under way or last started: the next one waits for it.
    var userContextSending: Task<UserContextReport, Never>?

    public init(_ configuration: ThreadDeskConfiguration) {
        self.configuration = configuration
        let urlConfiguration = URLSessionConfiguration.ephemeral
        urlConfiguration.timeoutIntervalForRequest = configuration.requestTimeout + 5
        urlConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        transport = Transport(session: URLSession(configuration: urlConfiguration), timeout: configuration.requestTimeout)
    }

    // MARK: Requests

    func request(_ path: String, method: String = "GET", token: String? = nil, query: [URLQueryItem] = []) -> URLRequest {
        var components = URLComponents(url: configuration.serverURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty {
            components.queryItems = query
            // A "+" left as it is reads as a space on the server.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    func encode(_ value: some Encodable, into request: inout URLRequest) throws(ThreadDeskError) {
        do {
            request.httpBody = try JSONEncoder().encode(value)
        } catch {
            throw .invalidResponse("could not encode the request: \(error)")
        }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }

    func decode<T: Decodable>(_ type: T.Type, from reply: Transport.Reply) throws(ThreadDeskError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: reply.body)
        } catch {
            throw .invalidResponse("\(T.self): \(error)")
        }
    }

    /// Sends `make(token)` until it succeeds, is refused for good, or `attempts` ran out.
    func withRetries<T: Sendable>(
        attempts: Int, _ call: (String) async throws(ThreadDeskError) -> T
    ) async throws(ThreadDeskError) -> T {
        var attempt = 0
        while true {
            do {
                return try await authorized(call)
            } catch where error.isRetryable && attempt + 1 < attempts {
                let wait = error.retryAfter ?? configuration.retryBackoff.delay(attempt: attempt)
                attempt += 1
                do {
                    try await Time.sleep(wait)
                } catch {
                    throw .transport("cancelled")
                }
            }
        }
    }
}
