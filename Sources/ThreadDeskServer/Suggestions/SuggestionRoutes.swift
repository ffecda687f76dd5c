import DiscordREST
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `GET /v1/suggestions?q=`: the curated answers that best match what the user is typing, from
/// memory (no Discord call, no store read but the token's), limited like reads.
struct SuggestionRoutes: Sendable {
    /// Each app's curated answers; a user of an app without a FAQ forum always gets none.
    let books: FAQShelf
    static let maxQueryLength = 200
    /// Unicode scalars at most: one character may be any number of them (a run of combining
    /// marks or Hangul jamo), and a word's typo lookups cost its length squared.
    static let maxQueryScalars = 400

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("suggestions", use: suggestions)
    }

    @Sendable func suggestions(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user()
        let query = request.uri.queryParameters["q"].map(String.init) ?? ""
        guard (1...Self.maxQueryLength).contains(query.count), query.unicodeScalars.count <= Self.maxQueryScalars,
            !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !"\n\r\t".unicodeScalars.contains($0) }) else {
            throw APIError.badRequest(.invalidQuery, "q must be 1 to \(Self.maxQueryLength) characters of text.")
        }
        guard let book = books.book(for: user.id.app) else { return try jsonResponse(Suggestions(suggestions: [])) }
        var suggestions: [Suggestion] = []
        for answer in await book.suggestions(for: query) {
            let files = await book.attachments(of: answer.id).map {
                SupportMessage.Attachment(
                    id: $0.id.description, filename: $0.filename, size: $0.size, contentType: $0.contentType,
                    url: SupportMessage.attachmentPath($0.id.description), width: $0.width, height: $0.height)
            }
            suggestions.append(Suggestion(id: answer.id, title: answer.title, answer: answer.text, attachments: files))
        }
        return try jsonResponse(Suggestions(suggestions: suggestions))
    }
}
