import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session: opened, renewed, replaced when its key is lost or refused, signed out; and calls made as it.
extension ThreadDeskClient {
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
            sendUserContextSoon()
            return session
        }
        let created = try await createSession(presenting: nil, installation: installation)
        sendUserContextSoon()
        return created
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

    /// Forgets the session, the unsent messages, attributes and activity on this device.
    func forgetSession() async throws(ThreadDeskError) {
        // A send of the user's context under way ends first: nothing about this user may go out
        // under the next one's session.
        if let sending = userContextSending {
            sending.cancel()
            _ = await sending.value
            userContextSending = nil
        }
        session = nil
        do {
            try await configuration.sessionStore.save(nil)
            for entry in try await configuration.outbox.entries() { try await configuration.outbox.remove(entry.id) }
            try forgetUserContext()
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
        } catch where error.isServer(status: 401) && keyID != nil {
            // The server no longer knows the kept key (its store restored from before it) or no
            // longer trusts it (its trust narrowed): a new key attests, once.
            guard error.code == .attestationRequired || error.code == .assertionUnknownKey else { throw error }
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
        } catch where error.isServer(status: 401, code: .unauthorized) {
            // Replaced by another call meanwhile (which ended this token): the call again, as the new one.
            if let now = session, now.token != current.token { return try await call(now.token) }
            guard configuration.userHash != nil else { throw error }
            let renewed = try await createSession(presenting: nil, installation: nil)
            return try await call(renewed.token)
        } catch where error.isServer(status: 401, code: .attestationRequired) || error.isServer(status: 401, code: .assertionUnknownKey) {
            // The server now serves attested devices only and this session's token is not one, or
            // it no longer knows the session's key (forgotten after long disuse, or its store
            // restored from before it): a new session, with a newly attested key if need be.
            guard configuration.appAttest != nil else { throw error }
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
}
