import Hummingbird
import ThreadDeskCore
import ThreadDeskWire

/// `GET /v1/suggestions?q=`: the curated answers that best match what the user is typing, from
/// memory (no Discord call, no store read but the token's), limited like reads.
struct SuggestionRoutes: Sendable {
    /// nil when no FAQ forum is configured: the answer is always empty.
    let book: FAQBook?
    static let maxQueryLength = 200

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("suggestions", use: suggestions)
    }

    @Sendable func suggestions(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        _ = try context.user()
        let query = request.uri.queryParameters["q"].map(String.init) ?? ""
        guard (1...Self.maxQueryLength).contains(query.count), !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !"\n\r\t".unicodeScalars.contains($0) }) else {
            throw APIError.badRequest(.invalidQuery, "q must be 1 to \(Self.maxQueryLength) characters of text.")
        }
        let found = await book?.suggestions(for: query) ?? []
        return try jsonResponse(Suggestions(suggestions: found.map { Suggestion(id: $0.id, title: $0.title, answer: $0.text) }))
    }
}
