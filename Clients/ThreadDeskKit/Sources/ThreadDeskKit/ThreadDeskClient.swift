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
    private var lastTyping: TimeInterval?

    public init(_ configuration: ThreadDeskConfiguration) {
        self.configuration = configuration
        let urlConfiguration = URLSessionConfiguration.ephemeral
        urlConfiguration.timeoutIntervalForRequest = configuration.requestTimeout + 5
        urlConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        transport = Transport(session: URLSession(configuration: urlConfiguration), timeout: configuration.requestTimeout)
    }

    // MARK: Session

    /// The user's id, once a session is open.
    public var userID: String? { session?.userId }

    /// Opens the user's session: the kept one when it belongs to the configured user, otherwise a
    /// new one. With `installation`, tells support about the app and device (posted only when it
    /// changed). Pending sends from an earlier launch go out afterwards with ``flushOutbox()``.
    @discardableResult
    public func open(installation: [String: InstallationValue]? = nil) async throws(ThreadDeskError) -> Session {
        if session == nil { session = try await loadStoredSession() }
        if let session, configuration.userID == nil || configuration.userID == session.userId {
            if let installation { _ = try await updateInstallation(installation) }
            return session
        }
        return try await createSession(presenting: nil, installation: installation)
    }

    /// The user of the session kept on this device, read without a network call; nil when none
    /// is kept, or when it belongs to another user than the configured one.
    public func keptUserID() async -> String? {
        if session == nil { session = try? await loadStoredSession() }
        guard let session, configuration.userID == nil || configuration.userID == session.userId else { return nil }
        return session.userId
    }

    /// Replaces the token with a new one (the current one proves the identity), e.g. after it
    /// may have leaked, then ends the old one. If the answer is lost the old token still works,
    /// so renewing never locks the user out. Also the way back in with `userHash` when the kept
    /// token was refused.
    @discardableResult
    public func renewSession() async throws(ThreadDeskError) -> Session {
        if session == nil { session = try await loadStoredSession() }
        let old = session
        let renewed = try await createSession(presenting: old, installation: nil)
        if let old, old.token != renewed.token { _ = try? await transport.send(request("v1/session", method: "DELETE", token: old.token)) }
        return renewed
    }

    /// Signs this device out: its token stops working on the server (the user's other devices
    /// keep theirs), and the session and unsent messages here are forgotten (user switch).
    public func signOut() async throws(ThreadDeskError) {
        if session == nil { session = try await loadStoredSession() }
        if let token = session?.token { _ = try? await transport.send(request("v1/session", method: "DELETE", token: token)) }
        try await forgetSession()
    }

    /// Forgets the session and the unsent messages on this device.
    func forgetSession() async throws(ThreadDeskError) {
        session = nil
        do {
            try await configuration.sessionStore.save(nil)
            for entry in try await configuration.outbox.entries() { try await configuration.outbox.remove(entry.id) }
        } catch {
            throw .transport("could not clear the stores: \(error)")
        }
    }

    func loadStoredSession() async throws(ThreadDeskError) -> Session? {
        do {
            return try await configuration.sessionStore.load()
        } catch {
            throw .invalidResponse("the session store failed: \(error)")
        }
    }

    func createSession(presenting current: Session?, installation: [String: InstallationValue]?) async throws(ThreadDeskError) -> Session {
        let userID = configuration.userID ?? current?.userId
        var hash: String?
        if let userID, let proof = configuration.userHash {
            do {
                hash = try await proof(userID)
            } catch {
                throw .transport("the app's userHash provider failed: \(error)")
            }
        }
        let presented = current?.userId == userID ? current?.token : nil
        var request = request("v1/session", method: "POST", token: presented)
        request.setValue(configuration.appKey, forHTTPHeaderField: APIHeader.appKey)
        var body = SessionRequest(userId: userID, userHash: hash, installation: installation)
        try encode(body, into: &request)
        // With App Attest: the session's key asserts (renewal), or a new key is attested.
        let keyID = (current?.token).flatMap(Self.attestedKeyID(inToken:))
        try await attest(&request, body: &body, keyID: keyID)
        let reply: Transport.Reply
        do {
            reply = try await transport.send(request)
        } catch .server(401, let code, let message, let wait) where keyID != nil {
            // The server no longer knows the kept key (its store restored from before it) or no
            // longer trusts it (its trust narrowed): a new key attests, once.
            guard code == .attestationRequired || code == .assertionUnknownKey else {
                throw .server(status: 401, code: code, message: message, retryAfter: wait)
            }
            var fresh = self.request("v1/session", method: "POST", token: presented)
            fresh.setValue(configuration.appKey, forHTTPHeaderField: APIHeader.appKey)
            body.attestation = nil
            try encode(body, into: &fresh)
            try await attest(&fresh, body: &body, keyID: nil)
            reply = try await transport.send(fresh)
        }
        let created = try decode(Session.self, from: reply)
        do {
            try await configuration.sessionStore.save(created)
        } catch {
            throw .invalidResponse("the session store failed: \(error)")
        }
        session = created
        return created
    }

    /// Runs an authenticated call; when the token is refused and the app can prove the user's
    /// identity, opens a new session and runs it once more.
    func authorized<T>(_ call: (String) async throws(ThreadDeskError) -> T) async throws(ThreadDeskError) -> T {
        if session == nil { session = try await loadStoredSession() }
        guard let current = session else { throw .noSession }
        do {
            return try await call(current.token)
        } catch .server(401, .unauthorized, let message, let wait) {
            // Replaced by another call meanwhile (which ended this token): the call again, as the new one.
            if let now = session, now.token != current.token { return try await call(now.token) }
            guard configuration.userHash != nil else { throw .server(status: 401, code: .unauthorized, message: message, retryAfter: wait) }
            let renewed = try await createSession(presenting: nil, installation: nil)
            return try await call(renewed.token)
        } catch .server(401, let code, let message, let wait) where code == .attestationRequired || code == .assertionUnknownKey {
            // The server now serves attested devices only and this session's token is not one, or
            // it no longer knows the session's key (forgotten after long disuse, or its store
            // restored from before it): a new session, with a newly attested key if need be.
            guard configuration.appAttest != nil else { throw .server(status: 401, code: code, message: message, retryAfter: wait) }
            let renewed = try await replaceSession(current)
            return try await call(renewed.token)
        }
    }

    /// A new session in place of `current`, whose key is lost or forgotten or which the server no
    /// longer takes: one at a time. Calls that find it refused at once share one replacement (one
    /// new key attested, not one each), and a call that finds it replaced already gets the new
    /// one. The replaced token is then ended on the server (where it still works).
    func replaceSession(_ current: Session) async throws(ThreadDeskError) -> Session {
        // Signed out meanwhile: nothing to replace.
        guard let session else { throw .noSession }
        if session.token != current.token { return session }
        if let replacing, replacing.token == current.token { return try await Self.value(of: replacing.task) }
        let task = Task<Session, any Error> { try await self.createSession(presenting: current, installation: nil) }
        replacing = (current.token, task)
        defer { if replacing?.token == current.token { replacing = nil } }
        let renewed = try await Self.value(of: task)
        if renewed.token != current.token { _ = try? await transport.send(request("v1/session", method: "DELETE", token: current.token)) }
        return renewed
    }

    private static func value(of task: Task<Session, any Error>) async throws(ThreadDeskError) -> Session {
        do {
            return try await task.value
        } catch let error as ThreadDeskError {
            throw error
        } catch {
            throw .transport("\(error)")
        }
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

    // MARK: Messages

    /// Sends a message (text, files or both) exactly once: it goes into the outbox first with a
    /// new idempotency key, then to the server, retried with the same key after a timeout or a
    /// 503; only the server's confirmation (or a refusal for good) takes it out. When the
    /// attempts run out it stays there and this throws ``ThreadDeskError/pending(idempotencyKey:lastError:)``.
    /// `suggestionID`: the suggestion (``suggestions(for:)``) shown right before, for a text-only
    /// message; support gets a note naming it.
    @discardableResult
    public func send(_ text: String, files: [OutgoingFile] = [], suggestionID: String? = nil) async throws(ThreadDeskError) -> SupportMessage {
        try await send(OutboxEntry(text: text, files: files, suggestionID: suggestionID))
    }

    /// Sends an outbox entry the app made itself (to show it as "sending…" under its id before
    /// the server has it), as ``send(_:files:suggestionID:)`` does; sending one that waits in the
    /// outbox already sends it again under the same idempotency key, so the server posts it once.
    @discardableResult
    public func send(_ entry: OutboxEntry) async throws(ThreadDeskError) -> SupportMessage {
        do {
            try await configuration.outbox.put(entry)
        } catch {
            throw .invalidResponse("the outbox failed: \(error)")
        }
        return try await deliver(entry)
    }

    /// Sends what is left in the outbox (from a launch that ended before the server answered),
    /// oldest first, each with its own key: the server posts each once. Returns the confirmed
    /// messages; what still fails stays for the next call.
    @discardableResult
    public func flushOutbox() async throws(ThreadDeskError) -> [SupportMessage] {
        let entries: [OutboxEntry]
        do {
            entries = try await configuration.outbox.entries()
        } catch {
            throw .invalidResponse("the outbox failed: \(error)")
        }
        var sent: [SupportMessage] = []
        for entry in entries {
            do {
                sent.append(try await deliver(entry))
            } catch .pending {
                break
            } catch {
                continue
            }
        }
        return sent
    }

    /// Takes a message the server never confirmed out of the outbox: it will not be sent. (One
    /// the server had already taken before the answer was lost is the user's message all the
    /// same: ``delete(_:)`` removes it.)
    public func discardPending(_ idempotencyKey: String) async throws(ThreadDeskError) {
        do {
            try await configuration.outbox.remove(idempotencyKey)
        } catch {
            throw .invalidResponse("the outbox failed: \(error)")
        }
    }

    /// Messages waiting for the server's confirmation, oldest first (show them as "sending…").
    public func pendingMessages() async throws(ThreadDeskError) -> [OutboxEntry] {
        do {
            return try await configuration.outbox.entries()
        } catch {
            throw .invalidResponse("the outbox failed: \(error)")
        }
    }

    private func deliver(_ entry: OutboxEntry) async throws(ThreadDeskError) -> SupportMessage {
        do {
            let message = try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
                try await post(entry, token: token)
            }
            try? await configuration.outbox.remove(entry.id)
            return message
        } catch where error.isRetryable {
            throw .pending(idempotencyKey: entry.id, lastError: error.description)
        } catch {
            // Refused for good (too long, a file of a refused type…): retrying cannot help.
            try? await configuration.outbox.remove(entry.id)
            throw error
        }
    }

    private func post(_ entry: OutboxEntry, token: String) async throws(ThreadDeskError) -> SupportMessage {
        var request = request("v1/messages", method: "POST", token: token)
        request.setValue(entry.id, forHTTPHeaderField: APIHeader.idempotencyKey)
        if entry.files.isEmpty {
            try encode(MessageRequest(content: entry.text, suggestionId: entry.suggestionID), into: &request)
        } else {
            let form = MultipartForm()
            request.httpBody = form.body(text: entry.text, files: entry.files)
            request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
            // Files cost Discord most: an attested session signs them up front.
            return try decode(SupportMessage.self, from: try await sendSigned(request))
        }
        return try decode(SupportMessage.self, from: try await sendAsserting(request))
    }

    /// A page of the conversation, oldest first: the newest `limit` without a cursor, those after
    /// `after` (newer) or before `before` (older).
    public func messages(after: String? = nil, before: String? = nil, limit: Int = 50) async throws(ThreadDeskError) -> MessagePage {
        var query = [URLQueryItem(name: "limit", value: String(min(max(limit, 1), 100)))]
        if let after { query.append(URLQueryItem(name: "after", value: after)) }
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        return try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            try decode(MessagePage.self, from: try await transport.send(request("v1/messages", token: token, query: query)))
        }
    }

    /// Changes the text of one of the user's own messages.
    public func edit(_ messageID: String, to text: String) async throws(ThreadDeskError) -> SupportMessage {
        try await authorized { token throws(ThreadDeskError) in
            var request = request("v1/messages/\(messageID)", method: "PATCH", token: token)
            try encode(MessageRequest(content: text), into: &request)
            return try decode(SupportMessage.self, from: try await transport.send(request))
        }
    }

    /// Sends a message Discord refused (`delivery == .failed`) again, as it is; `edit(_:to:)`
    /// sends it with another text. It is `queued` again, and `sent` once support has it.
    public func retry(_ message: SupportMessage) async throws(ThreadDeskError) -> SupportMessage {
        try await edit(message.id, to: message.content)
    }

    /// Deletes one of the user's own messages (one still `queued` or `failed` never reaches support).
    public func delete(_ messageID: String) async throws(ThreadDeskError) {
        try await authorized { token throws(ThreadDeskError) in
            _ = try await transport.send(request("v1/messages/\(messageID)", method: "DELETE", token: token))
        }
    }

    /// The bytes of an attachment (its `url` is ThreadDesk's, fetched with the token).
    public func attachmentData(_ attachment: SupportMessage.Attachment) async throws(ThreadDeskError) -> Data {
        try await authorized { token throws(ThreadDeskError) in
            let path = attachment.url.hasPrefix("/") ? String(attachment.url.dropFirst()) : attachment.url
            var request = request(path, token: token)
            request.setValue("*/*", forHTTPHeaderField: "Accept")
            return try await transport.send(request).body
        }
    }

    /// The bytes of a file at one of ThreadDesk's own attachment URLs, fetched with the token.
    /// Any other URL is refused: the token goes to the configured server's attachments only.
    public func data(at url: URL) async throws(ThreadDeskError) -> Data {
        guard Self.isAttachmentURL(url, of: configuration.serverURL) else {
            throw .invalidResponse("\(url.absoluteString) is not a ThreadDesk attachment")
        }
        return try await authorized { token throws(ThreadDeskError) in
            var request = URLRequest(url: url)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("*/*", forHTTPHeaderField: "Accept")
            return try await transport.send(request).body
        }
    }

    /// Whether `url` is `<server>/v1/attachments/…` on the server's scheme, host and port, with
    /// no credentials, fragment, dot segments or encoded slashes that could lead elsewhere.
    nonisolated static func isAttachmentURL(_ url: URL, of server: URL) -> Bool {
        guard let target = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let base = URLComponents(url: server, resolvingAgainstBaseURL: false),
            target.user == nil, target.password == nil, target.fragment == nil,
            target.scheme?.lowercased() == base.scheme?.lowercased(),
            target.host?.lowercased() == base.host?.lowercased(),
            (target.port ?? defaultPort(target.scheme)) == (base.port ?? defaultPort(base.scheme))
        else { return false }
        let path = target.percentEncodedPath
        let lowered = path.lowercased()
        guard !lowered.contains("%2f"), !lowered.contains("%5c"), !path.contains("\\") else { return false }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { segment in
            let decoded = segment.removingPercentEncoding ?? String(segment)
            return decoded == "." || decoded == ".."
        }) else { return false }
        let prefix = (base.percentEncodedPath.hasSuffix("/") ? String(base.percentEncodedPath.dropLast()) : base.percentEncodedPath)
            + "/v1/attachments/"
        return path.hasPrefix(prefix) && path.count > prefix.count
    }

    private nonisolated static func defaultPort(_ scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    // MARK: Typing and read state

    /// The user is typing: shows "typing…" to support. Call it on every keystroke; at most one
    /// report goes out per `typingInterval`. Best effort: failures are ignored.
    public func typing() async {
        let now = Time.now
        if let lastTyping, now < lastTyping + configuration.typingInterval { return }
        lastTyping = now
        _ = try? await authorized { token throws(ThreadDeskError) in
            _ = try await transport.send(request("v1/typing", method: "POST", token: token))
        }
    }

    /// The user has read everything up to `messageID`; the unread count and the push badge
    /// follow, and support sees a read receipt.
    @discardableResult
    public func markRead(_ messageID: String) async throws(ThreadDeskError) -> ReadState {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/read", method: "POST", token: token)
            try encode(ReadRequest(messageId: messageID), into: &request)
            return try decode(ReadState.self, from: try await transport.send(request))
        }
    }

    /// Unread support messages and the read mark.
    public func readState() async throws(ThreadDeskError) -> ReadState {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            try decode(ReadState.self, from: try await transport.send(request("v1/unread", token: token)))
        }
    }

    /// Unread support messages.
    public func unreadCount() async throws(ThreadDeskError) -> Int { try await readState().count }

    /// Whether support is in now, and when it is next in if not: to say what to expect before
    /// the user writes.
    public func supportStatus() async throws(ThreadDeskError) -> SupportStatus {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            try decode(SupportStatus.self, from: try await transport.send(request("v1/support-status", token: token)))
        }
    }

    /// The curated answers that best match what the user has typed so far (at most five, best
    /// first), to show before they send. Call it debounced as they type (a few hundred
    /// milliseconds after the last keystroke); blank text gives none without a call, and only the
    /// first 200 characters are looked at. Send the id of the answer shown with the next message
    /// (`send(_:suggestionID:)`) so support knows what the user already read.
    public func suggestions(for text: String) async throws(ThreadDeskError) -> [Suggestion] {
        let query = String(text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "" : text.prefix(200))
        guard !query.isEmpty else { return [] }
        return try await withRetries(attempts: 2) { token throws(ThreadDeskError) in
            try decode(
                Suggestions.self,
                from: try await transport.send(request("v1/suggestions", token: token, query: [URLQueryItem(name: "q", value: query)]))
            ).suggestions
        }
    }

    // MARK: Device, diagnostics, pushes

    /// Tells support about the app and device (a note in the thread when something changed).
    @discardableResult
    public func updateInstallation(_ installation: [String: InstallationValue]) async throws(ThreadDeskError) -> InstallationResult {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/installation", method: "PUT", token: token)
            try encode(installation, into: &request)
            return try decode(InstallationResult.self, from: try await transport.send(request))
        }
    }

    /// What can be told about this app and device without asking the user.
    public nonisolated static func currentInstallation() -> [String: InstallationValue] {
        var info: [String: InstallationValue] = [:]
        let bundle = Bundle.main.infoDictionary ?? [:]
        if let version = bundle["CFBundleShortVersionString"] as? String { info["appVersion"] = .string(version) }
        if let build = bundle["CFBundleVersion"] as? String { info["buildVersion"] = .string(build) }
        let os = ProcessInfo.processInfo.operatingSystemVersion
        info["osVersion"] = .string("\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)")
        #if os(iOS)
        info["osPlatform"] = "iOS"
        #elseif os(macOS)
        info["osPlatform"] = "macOS"
        #elseif os(Linux)
        info["osPlatform"] = "Linux"
        #endif
        info["locale"] = .string(Locale.current.identifier)
        return info
    }

    /// Uploads a diagnostics document (any `Encodable` that encodes to a JSON object): support
    /// gets it as a file and a readable summary; the user does not see it in the chat. Retried
    /// with one idempotency key, so it is posted once.
    @discardableResult
    public func uploadDiagnostics(_ document: some Encodable & Sendable) async throws(ThreadDeskError) -> DiagnosticsResult {
        let body: Data
        do {
            body = try JSONEncoder().encode(document)
        } catch {
            throw .invalidResponse("could not encode the diagnostics: \(error)")
        }
        return try await uploadDiagnostics(json: body)
    }

    /// Uploads diagnostics that are already JSON (a JSON object).
    @discardableResult
    public func uploadDiagnostics(json body: Data) async throws(ThreadDeskError) -> DiagnosticsResult {
        let key = UUID().uuidString
        return try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/diagnostics", method: "POST", token: token)
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(key, forHTTPHeaderField: APIHeader.idempotencyKey)
            // Diagnostics always need an attested session's assertion.
            return try decode(DiagnosticsResult.self, from: try await sendSigned(request))
        }
    }

    /// Registers the device token Apple gave the app (`didRegisterForRemoteNotificationsWithDeviceToken`).
    public func registerPushToken(_ deviceToken: Data, environment: PushEnvironmentName) async throws(ThreadDeskError) {
        let hex = deviceToken.map { String(format: "%02x", $0) }.joined()
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/push-token", method: "PUT", token: token)
            try encode(PushTokenRequest(token: hex, environment: environment), into: &request)
            // Signed by an attested session's key: a copied token alone cannot take the user's pushes.
            _ = try await sendSigned(request)
        }
    }

    /// No more pushes to this device.
    public func unregisterPushToken() async throws(ThreadDeskError) {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            _ = try await sendSigned(request("v1/push-token", method: "DELETE", token: token))
        }
    }

    /// The id of the support message a ThreadDesk push announces (`userInfo` of the
    /// notification), nil for any other push.
    public nonisolated static func messageID(fromPush userInfo: [AnyHashable: Any]) -> String? {
        SupportPush(userInfo: userInfo)?.messageID
    }

    /// The message a push announced, fetched (nil when it is no longer visible).
    public func message(forPush userInfo: [AnyHashable: Any]) async throws(ThreadDeskError) -> SupportMessage? {
        guard let id = Self.messageID(fromPush: userInfo), let number = UInt64(id), number > 0 else { return nil }
        let page = try await messages(after: String(number - 1), limit: 1)
        return page.messages.first { $0.id == id }
    }
}
