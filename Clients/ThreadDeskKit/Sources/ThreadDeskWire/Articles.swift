/// One article of the app's help center: a post of its FAQ forum in Discord, the question its
/// title and the answer its text. The id is the post's, the same as a ``Suggestion``'s.
public struct Article: Sendable, Codable, Hashable, Identifiable {
    public var id: String
    /// The question.
    public var title: String
    /// The answer (Discord markdown).
    public var text: String
    /// The forum's tags on the post, by name.
    public var tags: [String]
    /// The answer's files (screenshots), fetched through ThreadDesk like a message's.
    public var attachments: [SupportMessage.Attachment]
    /// When the post last changed (ISO 8601).
    public var updatedAt: String

    public init(id: String, title: String, text: String, tags: [String], attachments: [SupportMessage.Attachment], updatedAt: String) {
        self.id = id
        self.title = title
        self.text = text
        self.tags = tags
        self.attachments = attachments
        self.updatedAt = updatedAt
    }
}

/// `GET /v1/articles?q=&tag=&limit=&after=`: a page of articles. Without `q` they come by title;
/// with it, best match first (the ranking of suggestions). An `ETag` comes with every page:
/// send it back as `If-None-Match` and an unchanged help center answers 304 with no body.
public struct ArticlePage: Sendable, Codable, Hashable {
    public var articles: [Article]
    /// Every tag an article of the help center carries, by name (to browse by).
    public var tags: [String]
    /// Pass as `after` for the next page; nil on the last.
    public var next: String?

    public init(articles: [Article], tags: [String], next: String?) {
        self.articles = articles
        self.tags = tags
        self.next = next
    }

    /// Articles per page when `limit` is not given, and the most a page holds.
    public static let defaultLimit = 20
    public static let maxLimit = 100
}

/// The answer of `POST /v1/articles/{id}/views`.
public struct ArticleView: Sendable, Codable, Hashable {
    /// false when the user's read of the article was already counted today (UTC).
    public var counted: Bool

    public init(counted: Bool) {
        self.counted = counted
    }
}
