import Crypto
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The app's help center: its FAQ forum's answers as articles, listed by title or found by the
/// suggestions' ranking, from the book in memory (no Discord call, no store read); their reads
/// counted in the store, once per user, article and UTC day. Validators come from the book's
/// digests, so an unchanged help center is answered without building a page.
struct HelpCenter: Sendable {
    /// Each app's book; an app without a FAQ forum has an empty help center.
    let books: FAQShelf
    let reads: any ArticleReads
    let time: ServerTime

    /// What a page asks for, checked (the routes say what is wrong with a request).
    struct PageRequest: Sendable, Hashable {
        /// Words to search for: the ranking of suggestions instead of the titles' order.
        var query: String?
        /// A tag's name, any case.
        var tag: String?
        var limit: Int
        var after: ArticleCursor?
    }

    /// The most read articles of a window, for support's numbers.
    struct ReadArticle: Sendable, Codable, Hashable {
        var id: String
        /// nil once the article is gone from the forum.
        var title: String?
        var reads: Int
        /// Reads the user did not follow with a message within 10 minutes.
        var withoutMessage: Int
    }

    private static let empty = FAQArticles(posts: [:], tagNames: [:])

    private func articles(of app: AppID) async -> FAQArticles {
        await books.book(for: app)?.articles() ?? Self.empty
    }

    /// The page's validator: what the book holds and what was asked, hashed; nothing else shapes a page.
    func etag(of request: PageRequest, app: AppID) async -> String {
        Self.etag(of: request, in: await articles(of: app))
    }

    private static func etag(of request: PageRequest, in articles: FAQArticles) -> String {
        let parts = [articles.digest, request.query ?? "", request.tag.map(FAQArticles.key) ?? "", String(request.limit), request.after?.token ?? ""]
        let data = (try? JSONEncoder().encode(parts)) ?? Data()
        return quoted(FAQArticles.hex(SHA256.hash(data: data)))
    }

    private static func quoted(_ digest: String) -> String { "\"" + digest.prefix(32) + "\"" }

    /// A page of `app`'s articles and its validator.
    func page(_ request: PageRequest, app: AppID) async -> (page: ArticlePage, etag: String) {
        let tag = request.tag.map(FAQArticles.key)
        func carries(_ entry: FAQArticles.Entry) -> Bool { tag.map { tag in entry.tags.contains { FAQArticles.key($0) == tag } } ?? true }
        let articles: FAQArticles
        var picked: [FAQArticles.Entry] = []
        var next: ArticleCursor?
        if let query = request.query {
            let found = await books.book(for: app)?.search(query) ?? (articles: Self.empty, ranked: [])
            articles = found.articles
            let matching = found.ranked.compactMap { articles.places[$0].map { articles.byTitle[$0] } }.filter(carries)
            var offset = 0
            if case .rank(let after) = request.after { offset = after }
            picked = Array(matching.dropFirst(offset).prefix(request.limit))
            if offset + request.limit < matching.count { next = .rank(offset: offset + request.limit) }
        } else {
            articles = await self.articles(of: app)
            var place = 0
            if case .title(let key, let number) = request.after { place = articles.place(after: key, number: number) }
            while place < articles.byTitle.count, picked.count <= request.limit {
                if carries(articles.byTitle[place]) { picked.append(articles.byTitle[place]) }
                place += 1
            }
            if picked.count > request.limit {
                picked.removeLast()
                next = picked.last.map { .title(key: $0.key, number: $0.number) }
            }
        }
        let page = ArticlePage(articles: picked.map(Self.article), tags: articles.tags, next: next?.token)
        return (page, Self.etag(of: request, in: articles))
    }

    /// One article and its validator; nil when `app`'s help center has no such article.
    func article(_ id: String, app: AppID) async -> (article: Article, etag: String)? {
        let articles = await articles(of: app)
        guard let place = articles.places[id] else { return nil }
        let entry = articles.byTitle[place]
        return (Self.article(entry), Self.quoted(entry.digest))
    }

    /// Counts the user's read of an article of their app's help center, once a UTC day.
    /// - Returns: Whether it was counted now; nil when there is no such article (nothing stored).
    func view(_ id: String, by user: UserID) async throws -> Bool? {
        guard await articles(of: user.app).places[id] != nil else { return nil }
        return try await reads.recordArticleRead(id, by: user, at: time.now())
    }

    /// `app`'s articles read most since `since`, with their titles as the forum has them now.
    func mostRead(app: AppID, since: Date, limit: Int) async throws -> [ReadArticle] {
        let totals = try await reads.articleReadTotals(app: app, since: since, limit: limit)
        let articles = await articles(of: app)
        return totals.map { total in
            ReadArticle(
                id: total.article, title: articles.places[total.article].map { articles.byTitle[$0].title }, reads: total.reads,
                withoutMessage: total.withoutMessage)
        }
    }

    private static func article(_ entry: FAQArticles.Entry) -> Article {
        Article(
            id: entry.id, title: entry.title, text: entry.text, tags: entry.tags, attachments: entry.attachments.map(SupportMessage.Attachment.init(served:)),
            updatedAt: entry.updatedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }
}
