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
        if session != nil {
            do {
                try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
                    _ = try await transport.send(request("v1/me", method: "DELETE", token: token))
                }
            } catch .server(401, .unauthorized, _, _) {
                // The token is gone: the erasure happened (its answer was lost), or the session had ended.
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
            try decode(DataExport.self, from: try await transport.send(request("v1/me/export", token: token, query: query)))
        }
    }
}
