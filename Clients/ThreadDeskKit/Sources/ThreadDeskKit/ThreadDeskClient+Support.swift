import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What support offers before the user writes: whether it is in, and curated answers.
extension ThreadDeskClient {
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
}
