import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An answer that may be the one the device holds already: `If-None-Match` sent, 304 received.
public enum Revalidated<Value: Sendable & Hashable>: Sendable, Hashable {
    /// The server's value, and the `ETag` to send next time.
    case fresh(Value, etag: String?)
    /// What the device holds under the `ETag` it sent is still current.
    case notModified
}

/// The help center: the app's FAQ forum as articles, revalidated with ETags so a device that
/// holds a page asks for it again at the cost of a 304.
extension ThreadDeskClient {
    /// A page of articles: without `query` by title (browse, by `tag` when given), with it best
    /// match first. `after` is the previous page's `next`. With `etag` (the one a page came
    /// with), an unchanged page answers ``Revalidated/notModified``.
    public func articles(
        query: String? = nil, tag: String? = nil, limit: Int = ArticlePage.defaultLimit, after: String? = nil, etag: String? = nil
    ) async throws(ThreadDeskError) -> Revalidated<ArticlePage> {
        var items = [URLQueryItem(name: "limit", value: String(min(max(limit, 1), ArticlePage.maxLimit)))]
        if let query = query?.trimmingCharacters(in: .whitespacesAndNewlines), !query.isEmpty {
            items.append(URLQueryItem(name: "q", value: String(query.prefix(200))))
        }
        if let tag { items.append(URLQueryItem(name: "tag", value: tag)) }
        if let after { items.append(URLQueryItem(name: "after", value: after)) }
        return try await revalidated(ArticlePage.self, path: "v1/articles", query: items, etag: etag)
    }

    /// One article (its text, tags and files), revalidated as ``articles(query:tag:limit:after:etag:)`` is;
    /// one that is gone throws code `ErrorCode.articleNotFound` (404), an id that is none (not
    /// digits) `ErrorCode.invalidArticleId` before anything is sent.
    public func article(_ id: String, etag: String? = nil) async throws(ThreadDeskError) -> Revalidated<Article> {
        try await revalidated(Article.self, path: "v1/articles/\(try Self.articlePath(id))", query: [], etag: etag)
    }

    /// Counts the user's read of an article: once per user and day on the server (`counted` is
    /// false for a second read that day). ``HelpCenter`` calls it once a day per article itself.
    @discardableResult
    public func countArticleView(_ id: String) async throws(ThreadDeskError) -> ArticleView {
        let path = "v1/articles/\(try Self.articlePath(id))/views"
        return try await withRetries(attempts: 2) { token throws(ThreadDeskError) in
            try decode(ArticleView.self, from: try await transport.send(request(path, method: "POST", token: token)))
        }
    }

    /// An article id as a path segment: a FAQ post's id, digits, as the server takes it; anything
    /// else (a slash, a dot segment that could lead elsewhere) is refused before it is sent.
    private static func articlePath(_ id: String) throws(ThreadDeskError) -> String {
        guard (1...20).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalidInput(.invalidArticleId, "\(id.prefix(64)) is not an article id (a FAQ post's id, digits)")
        }
        return id
    }

    private func revalidated<T: Decodable & Sendable & Hashable>(
        _ type: T.Type, path: String, query: [URLQueryItem], etag: String?
    ) async throws(ThreadDeskError) -> Revalidated<T> {
        do {
            return try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
                var request = request(path, token: token, query: query)
                if let etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
                let reply = try await transport.send(request)
                return .fresh(try decode(T.self, from: reply), etag: reply.headers["etag"])
            }
        } catch where error.isServer(status: 304) && etag != nil {
            return .notModified
        }
    }
}
