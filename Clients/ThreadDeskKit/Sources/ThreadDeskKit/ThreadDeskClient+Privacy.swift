import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The user's data: erasing it (the account-deletion button Apple asks for) and taking a copy.
extension ThreadDeskClient {
    /// Erases everything the server keeps about the user — the conversation's copy, device info,
    /// push token, every session on every device — and forgets the session and unsent messages
    /// here. What becomes of the Discord thread is the server's choice (`USER_DELETION`). A later
    /// ``open(installation:)`` starts a new conversation, under the same id if one is configured.
    ///
    /// Safe to call again: a token the server no longer knows (401, what a retry gets after an
    /// erasure whose answer was lost) counts as erased. With `userID` and `userHash` configured the
    /// SDK proves the identity first when it holds no session (a reinstall), so the erasure
    /// reaches the account's data. Refusals that may pass (Discord away: 503) are retried, then thrown,
    /// and the session is kept for the next attempt.
    public func deleteMyData() async throws(ThreadDeskError) {
        if session == nil { session = try await loadStoredSession() }
        if session == nil, configuration.userID != nil, configuration.userHash != nil {
            _ = try await createSession(presenting: nil, installation: nil)
        }
        try await endSessions("v1/me")
    }

    /// Sends the `DELETE` of `path` that ends the user's sessions on the server, signed by an
    /// attested session's key (a copied token alone ends nothing), then forgets the session here.
    /// A 401 `unauthorized` counts as done: the token is gone (the call happened and its answer
    /// was lost, or the session had ended).
    private func endSessions(_ path: String) async throws(ThreadDeskError) {
        if session != nil {
            do {
                try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
                    _ = try await sendSigned(request(path, method: "DELETE", token: token))
                }
            } catch where error.isServer(status: 401, code: .unauthorized) {
                // Gone already.
            }
        }
        try await forgetSession()
    }

    /// A copy of the user's data (the right of access): what the server keeps about them and every
    /// message they can see, oldest first, read a page at a time (`pageSize`, up to 1,000) and
    /// returned whole, with `hasMore` false.
    public func exportMyData(pageSize: Int = 500) async throws(ThreadDeskError) -> DataExport {
        var export = try await exportMyData(after: nil, limit: pageSize)
        var page = export
        while page.hasMore, let last = page.messages.last?.id {
            page = try await exportMyData(after: last, limit: pageSize)
            export.messages += page.messages
        }
        export.hasMore = false
        return export
    }

    /// One page of ``exportMyData(pageSize:)``: the messages after `after` (from the start when nil).
    public func exportMyData(after: String?, limit: Int = 500) async throws(ThreadDeskError) -> DataExport {
        var query = [URLQueryItem(name: "limit", value: String(min(max(limit, 1), 1000)))]
        if let after { query.append(URLQueryItem(name: "after", value: after)) }
        return try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            // Signed by an attested session's key: a copied token alone exports nothing.
            try decode(DataExport.self, from: try await sendSigned(request("v1/me/export", token: token, query: query)))
        }
    }

    /// Signs the user out on every device: every token of theirs ends on the server, their live
    /// streams with them, and the session and unsent messages here are forgotten. A token that may
    /// have been copied stops working. Without `userHash`, no token is left that reopens the
    /// conversation: the next ``open(installation:)`` starts a new one (under the configured id,
    /// only with its `userHash`). Safe to call again: a token the server no longer knows counts as
    /// signed out.
    public func signOutEverywhere() async throws(ThreadDeskError) {
        if session == nil { session = try await loadStoredSession() }
        try await endSessions("v1/sessions")
    }
}
