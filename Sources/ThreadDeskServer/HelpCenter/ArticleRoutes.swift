import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `GET /v1/articles`, `GET /v1/articles/{id}` (reads, from memory, with `ETag` and 304) and
/// `POST /v1/articles/{id}/views` (a read counted, once a day): the app's help center for its users.
/// Every parameter is checked here; the help center takes checked values.
struct ArticleRoutes: Sendable {
    let help: HelpCenter
    /// Longest tag name taken (Discord's are 20 characters; room for any forum's).
    static let maxTagLength = 100

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("articles", use: list).get("articles/:id", use: article)
        // A read is a write on the user's behalf: charged per user and per device or address, like their context.
        groups.users(charging: { .context($0) }).post("articles/:id/views", use: view)
    }

    @Sendable func list(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let app = try context.user().id.app
        let asked = try Self.pageRequest(request)
        let etag = await help.etag(of: asked, app: app)
        if Self.matches(request, etag) { return Self.notModified(etag) }
        let (page, current) = await help.page(asked, app: app)
        return try Self.validated(jsonResponse(page), etag: current)
    }

    @Sendable func article(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let app = try context.user().id.app
        guard let (article, etag) = await help.article(try Self.articleID(context), app: app) else { throw Self.unknown }
        if Self.matches(request, etag) { return Self.notModified(etag) }
        return try Self.validated(jsonResponse(article), etag: etag)
    }

    @Sendable func view(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        guard let counted = try await help.view(try Self.articleID(context), by: user) else { throw Self.unknown }
        return try jsonResponse(ArticleView(counted: counted))
    }

    static let unknown = APIError(.notFound, .articleNotFound, "The app's help center has no article with this id.")

    static func articleID(_ context: ThreadDeskRequestContext) throws -> String {
        guard let raw = context.parameters.get("id"), let id = Snowflake(raw) else {
            throw APIError.badRequest(.invalidArticleId, "The article id must be a FAQ post's id (digits).")
        }
        return id.description
    }

    /// The query string's parameters, checked: each one wrong is a 400 naming it.
    static func pageRequest(_ request: Request) throws -> HelpCenter.PageRequest {
        let parameters = request.uri.queryParameters
        var asked = HelpCenter.PageRequest(limit: ArticlePage.defaultLimit)
        if let query = parameters.get("q") { asked.query = try SuggestionRoutes.validQuery(query) }
        if let tag = parameters.get("tag") {
            guard (1...maxTagLength).contains(tag.count), !tag.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw APIError.badRequest(.invalidQuery, "tag must be a tag's name: 1 to \(maxTagLength) characters of text.")
            }
            asked.tag = tag
        }
        if let text = parameters.get("limit") {
            guard text.utf8.count <= 3, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let limit = Int(text),
                (1...ArticlePage.maxLimit).contains(limit)
            else {
                throw APIError.badRequest(.invalidLimit, "limit must be a whole number from 1 to \(ArticlePage.maxLimit).")
            }
            asked.limit = limit
        }
        if let token = parameters.get("after") {
            // A search's cursor counts results, a listing's names a title: neither continues the other.
            guard let cursor = ArticleCursor(token: token), (asked.query != nil) == (cursor.isRank) else {
                throw APIError.badRequest(.invalidAfter, "after must be the `next` of the previous page, with the same q.")
            }
            asked.after = cursor
        }
        return asked
    }

    /// Whether `If-None-Match` names the current representation (weak comparison, as RFC 9110 asks of it).
    static func matches(_ request: Request, _ etag: String) -> Bool {
        for field in request.headers[values: .ifNoneMatch] {
            for tag in field.split(separator: ",") {
                let trimmed = tag.trimmingCharacters(in: .whitespaces)
                if trimmed == "*" || (trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed) == etag { return true }
            }
        }
        return false
    }

    /// Apps revalidate before they use what they kept; a cache between users never keeps it.
    private static let cacheControl = "private, no-cache"

    static func validated(_ response: Response, etag: String) -> Response {
        var response = response
        response.headers[.eTag] = etag
        response.headers[.cacheControl] = cacheControl
        return response
    }

    static func notModified(_ etag: String) -> Response {
        Response(status: .notModified, headers: [.eTag: etag, .cacheControl: cacheControl])
    }
}

extension ArticleCursor {
    var isRank: Bool {
        if case .rank = self { return true }
        return false
    }
}
