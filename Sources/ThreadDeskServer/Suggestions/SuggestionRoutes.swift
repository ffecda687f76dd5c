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

    /// What the user typed, or the 400 saying it is no query: the help center's search takes the same.
    static func validQuery(_ query: String) throws -> String {
        guard (1...Self.maxQueryLength).contains(query.count), query.unicodeScalars.count <= Self.maxQueryScalars,
            !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !"\n\r\t".unicodeScalars.contains($0) }) else {
            throw APIError.badRequest(.invalidQuery, "q must be 1 to \(Self.maxQueryLength) characters of text.")
        }
        return query
    }

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("suggestions", use: suggestions)
    }

    @Sendable func suggestions(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user()
        let query = try Self.validQuery(request.uri.queryParameters["q"].map(String.init) ?? "")
        guard let book = books.book(for: user.id.app) else { return try jsonResponse(Suggestions(suggestions: [])) }
        var suggestions: [Suggestion] = []
        for answer in await book.suggestions(for: query) {
            let files = await book.attachments(of: answer.id).map(SupportMessage.Attachment.init(served:))
            suggestions.append(Suggestion(id: answer.id, title: answer.title, answer: answer.text, attachments: files))
        }
        return try jsonResponse(Suggestions(suggestions: suggestions))
    }
}

extension SupportMessage.Attachment {
    /// An answer's file as a user gets it: through ThreadDesk's attachment route, never Discord's CDN.
    init(served file: MirroredMessage.Attachment) {
        self.init(
            id: file.id.description, filename: file.filename, size: file.size, contentType: file.contentType,
            url: SupportMessage.attachmentPath(file.id.description), width: file.width, height: file.height)
    }
}
