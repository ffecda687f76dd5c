import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Messages: sent through the device's outbox exactly once, paged, edited and deleted.
extension ThreadDeskClient {
    /// Sends a message (text, files or both) exactly once: it goes into the outbox first with a
    /// new idempotency key, then to the server, retried with the same key after a timeout or a
    /// 503; only the server's confirmation (or a refusal for good) takes it out. When the
    /// attempts run out it stays there and this throws a ``ThreadDeskError`` of kind ``ThreadDeskError/Kind-swift.struct/pending``.
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
            } catch where error.kind == .pending {
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
}
