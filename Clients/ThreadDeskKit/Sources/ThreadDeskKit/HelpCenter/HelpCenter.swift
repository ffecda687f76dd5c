import Foundation
import Observation

/// The app's help center for a screen to bind to (`HelpCenterView` in ThreadDeskUI, or UIKit
/// through `withObservationTracking`): the FAQ forum's answers as articles, browsed by tag,
/// searched as the user types, read with their images, and kept on the device so that the last
/// pages and the articles read open offline (where search looks through them instead).
///
/// ```swift
/// @State var help = HelpCenter(client: support, store: FileHelpCenterStore.standard())
/// var body: some View {
///     HelpCenterView(helpCenter: help, conversation: conversation) { showChat = true }
///         .task { await help.browse() }
/// }
/// ```
///
/// Every page and article is revalidated with its `ETag` (an unchanged one costs a 304), a read
/// is counted once per article and day, and a search answer that arrives after a newer query's
/// is dropped. Everything happens on the main actor; network calls suspend, never block it.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class HelpCenter {
    /// Page size, search debounce and what the device keeps.
    public struct Options: Sendable {
        /// Articles per page (at most `ArticlePage.maxLimit`).
        public var pageSize = ArticlePage.defaultLimit
        /// Quiet time after the last keystroke before a search goes out.
        public var searchDelay: Duration = .milliseconds(250)
        /// Browse pages kept for offline reading (the newest).
        public var keptPages = 50
        /// Articles read kept for offline reading, with their files (the newest).
        public var keptArticles = 200

        public init() {}
    }

    // MARK: State

    /// Every tag of the help center, to browse by.
    public private(set) var tags: [String] = []
    /// The tag browsed; nil: every article.
    public private(set) var selectedTag: String?
    /// The articles of ``selectedTag``, by title: the pages loaded so far.
    public private(set) var articles: [Article] = []
    /// More articles exist than ``articles`` (``loadMore()``).
    public private(set) var hasMore = false
    /// A page is on its way.
    public private(set) var isLoading = false
    /// The text searched for (``search(_:)``).
    public private(set) var query = ""
    /// The articles matching ``query``, best first; empty for a blank one.
    public private(set) var results: [Article] = []
    /// A search is on its way.
    public private(set) var isSearching = false
    /// The server could not be reached: what shows is what the device kept, and search looks
    /// through it. Cleared by the next answer.
    public private(set) var isOffline = false
    /// The last failure (offline ones too).
    public private(set) var lastError: ThreadDeskError?

    @ObservationIgnored public let client: ThreadDeskClient
    @ObservationIgnored public let options: Options
    @ObservationIgnored private let store: (any HelpCenterStore)?
    @ObservationIgnored private let sleep: @Sendable (Duration) async throws -> Void
    @ObservationIgnored private let now: @Sendable () -> Date
    @ObservationIgnored var cache = HelpCenterSnapshot()
    @ObservationIgnored private var loadingCache: Task<Void, Never>?
    @ObservationIgnored private var next: String?
    /// Each browse or search counts: an answer to an older one changes nothing.
    @ObservationIgnored private var browseGeneration = 0
    @ObservationIgnored private var searchGeneration = 0
    @ObservationIgnored private var lastSave: Task<Void, Never>?
    @ObservationIgnored private let work = ConversationWork()

    /// - Parameters:
    ///   - client: the client the help center talks through (it opens the session when none is).
    ///   - store: where the help center is kept on the device (``FileHelpCenterStore/standard()``
    ///     in an app); nil keeps nothing.
    ///   - options: page size, search debounce, and how much the device keeps (``Options``).
    public convenience init(client: ThreadDeskClient, store: (any HelpCenterStore)? = nil, options: Options = Options()) {
        self.init(client: client, store: store, options: options, clock: ContinuousClock(), now: { Date() })
    }

    /// As ``init(client:store:options:)``, with `clock` what the search debounce waits on and
    /// `now` the date a read is counted on (a test's own).
    public init<C: Clock>(
        client: ThreadDeskClient, store: (any HelpCenterStore)?, options: Options = Options(), clock: C,
        now: @escaping @Sendable () -> Date
    ) where C.Duration == Duration {
        self.client = client
        self.store = store
        self.options = options
        self.sleep = { try await clock.sleep(for: $0) }
        self.now = now
    }

    // MARK: Browsing

    /// Shows the articles of `tag` (nil: all): at once what the device kept, then the server's
    /// page (a 304 when unchanged). Offline without a kept page, the articles held that carry the tag.
    public func browse(tag: String? = nil) async {
        await loadCache()
        browseGeneration += 1
        let generation = browseGeneration
        if selectedTag != tag { selectedTag = tag }
        let key = Self.pageKey(tag: tag, after: nil)
        if let kept = cache.pages[key] { show(kept.value, appending: false) }
        isLoading = true
        let outcome = await page(key: key, tag: tag, after: nil)
        guard generation == browseGeneration else { return }
        isLoading = false
        switch outcome {
        case .success(let page):
            show(page, appending: false)
        case .failure(let error) where Self.isUnreachable(error) && cache.pages[key] == nil:
            let held = cache.knownArticles.filter { article in tag.map(article.tags.contains) ?? true }
            show(ArticlePage(articles: held.sorted(by: Self.byTitle), tags: Self.tags(of: cache.knownArticles), next: nil), appending: false)
        case .failure:
            break
        }
    }

    /// The next page of ``selectedTag``'s articles.
    public func loadMore() async {
        guard let after = next, !isLoading else { return }
        let generation = browseGeneration
        isLoading = true
        let outcome = await page(key: Self.pageKey(tag: selectedTag, after: after), tag: selectedTag, after: after)
        guard generation == browseGeneration else { return }
        isLoading = false
        if case .success(let page) = outcome { show(page, appending: true) }
    }

    // MARK: Searching

    /// Searches as the user types: call it with each change of the text (SwiftUI:
    /// `.task(id: text) { await help.search(text) }`). It waits for ``Options/searchDelay`` of
    /// quiet first, and an answer that arrives after a newer call's is dropped, so the results
    /// are always the latest query's. Offline, the articles held are searched instead.
    public func search(_ text: String) async {
        await loadCache()
        searchGeneration += 1
        let generation = searchGeneration
        if query != text { query = text }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            if !results.isEmpty { results = [] }
            isSearching = false
            return
        }
        do { try await sleep(options.searchDelay) } catch {
            // Cancelled while waiting: the latest search leaves no spinner behind.
            if generation == searchGeneration { isSearching = false }
            return
        }
        guard generation == searchGeneration, !Task.isCancelled else {
            if generation == searchGeneration { isSearching = false }
            return
        }
        isSearching = true
        let outcome: Result<Revalidated<ArticlePage>, ThreadDeskError>
        do throws(ThreadDeskError) {
            _ = try await client.open()
            outcome = .success(try await client.articles(query: trimmed, limit: options.pageSize))
        } catch {
            outcome = .failure(error)
        }
        guard generation == searchGeneration else { return }
        isSearching = false
        // The caller went away (the screen closed): its answer shows nowhere.
        guard !Task.isCancelled else { return }
        switch outcome {
        case .success(.fresh(let page, _)):
            reached()
            if page.articles != results { results = page.articles }
        case .success(.notModified):
            reached()
        case .failure(let error):
            failed(error)
            if Self.isUnreachable(error) { results = Self.search(trimmed, in: cache.knownArticles) }
        }
    }

    // MARK: Reading

    /// The article `id` to read: the server's (revalidated when the device holds it), kept for
    /// offline reading, its read counted once a day. Offline, the one the device holds; a
    /// ``ThreadDeskError`` when it holds none, or the article is gone (`ErrorCode.articleNotFound`).
    public func article(_ id: String) async throws(ThreadDeskError) -> Article {
        await loadCache()
        let article: Article
        do throws(ThreadDeskError) {
            article = try await revalidated(\.articles, key: id) { etag throws(ThreadDeskError) in
                try await client.article(id, etag: etag)
            }
        } catch where Self.isUnreachable(error) {
            failed(error)
            if let held = heldArticle(id) { return held }
            throw error
        } catch where error.code == .articleNotFound {
            cache.articles[id] = nil
            saveSoon()
            throw error
        }
        saveSoon()
        countRead(id)
        return article
    }

    /// The bytes of an article's file (its images): the device's copy when it holds one, else
    /// fetched with the session's token (ThreadDesk's own attachment URL) and kept.
    public func data(for attachment: SupportMessage.Attachment) async throws(ThreadDeskError) -> Data {
        if let store, let kept = await store.file(attachment.id) { return kept }
        let data = try await client.attachmentData(attachment)
        if let store { try? await store.keepFile(data, id: attachment.id) }
        return data
    }

    /// The article as the device holds it (read, or listed on a page), to show before
    /// ``article(_:)`` answers.
    public func heldArticle(_ id: String) -> Article? {
        cache.articles[id]?.value ?? cache.knownArticles.first { $0.id == id }
    }

    /// Forgets what the device kept (the pages, the articles read and their files, the reads counted).
    public func forget() async {
        await loadCache()
        browseGeneration += 1
        searchGeneration += 1
        cache = HelpCenterSnapshot()
        tags = []
        articles = []
        results = []
        hasMore = false
        next = nil
        let before = lastSave
        lastSave = Task { [store] in
            await before?.value
            try? await store?.save(nil)
        }
        await lastSave?.value
    }

    // MARK: Internals

    /// Counts a read of `id` unless one was counted today (UTC) on this device; one that fails is
    /// counted at the next read.
    private func countRead(_ id: String) {
        let day = Self.day(now())
        guard cache.views[id] != day else { return }
        // Earlier days no longer matter; marked before the call, so two quick reads count once.
        cache.views = cache.views.filter { $0.value == day }
        cache.views[id] = day
        work.start {
            do throws(ThreadDeskError) {
                _ = try await self.client.countArticleView(id)
                self.saveSoon()
            } catch {
                if self.cache.views[id] == day { self.cache.views[id] = nil }
            }
        }
    }

    /// A browse page, from the server or (304) the device, kept with its `ETag`.
    private func page(key: String, tag: String?, after: String?) async -> Result<ArticlePage, ThreadDeskError> {
        do throws(ThreadDeskError) {
            let page = try await revalidated(\.pages, key: key) { etag throws(ThreadDeskError) in
                try await client.articles(tag: tag, limit: options.pageSize, after: after, etag: etag)
            }
            saveSoon()
            return .success(page)
        } catch {
            failed(error)
            return .failure(error)
        }
    }

    /// `fetch`'s answer, asked for with the `ETag` of what the device holds under `key` (a 304
    /// keeps that), and kept.
    private func revalidated<Value>(
        _ slot: WritableKeyPath<HelpCenterSnapshot, [String: HelpCenterSnapshot.Kept<Value>]>, key: String,
        _ fetch: (_ etag: String?) async throws(ThreadDeskError) -> Revalidated<Value>
    ) async throws(ThreadDeskError) -> Value {
        _ = try await client.open()
        let kept = cache[keyPath: slot][key]
        let value: Value
        switch try await fetch(kept?.etag) {
        case .fresh(let fresh, let etag):
            value = fresh
            cache[keyPath: slot][key] = .init(value: fresh, etag: etag, keptAt: now())
        case .notModified:
            guard let kept else { throw .invalidResponse("a 304 for \(Value.self) \(key), which the device does not hold") }
            value = kept.value
            cache[keyPath: slot][key]?.keptAt = now()
        }
        reached()
        return value
    }

    private func show(_ page: ArticlePage, appending: Bool) {
        var list = page.articles
        if appending {
            let shown = Set(articles.map(\.id))
            list = articles + page.articles.filter { !shown.contains($0.id) }
        }
        if list != articles { articles = list }
        if page.tags != tags { tags = page.tags }
        next = page.next
        if hasMore != (page.next != nil) { hasMore = page.next != nil }
    }

    private func reached() {
        if isOffline { isOffline = false }
        if lastError != nil { lastError = nil }
    }

    private func failed(_ error: ThreadDeskError) {
        // Cancelled by the caller (the screen went away, a newer search): nothing to report.
        guard !Task.isCancelled else { return }
        if Self.isUnreachable(error), !isOffline { isOffline = true }
        lastError = error
    }

    /// No answer, or none worth having now: what the device kept is the best there is.
    private static func isUnreachable(_ error: ThreadDeskError) -> Bool {
        error.isRetryable || error.kind == .noSession
    }

    private func loadCache() async {
        if loadingCache == nil {
            loadingCache = Task { [store] in
                guard let kept = try? await store?.load() else { return }
                self.cache = kept
            }
        }
        await loadingCache?.value
    }

    /// Writes the cache (trimmed) after the writes before it, in order; and drops the files of
    /// articles no longer held.
    private func saveSoon() {
        guard let store else { return }
        cache.trim(pages: options.keptPages, articles: options.keptArticles)
        let snapshot = cache
        let before = lastSave
        lastSave = Task {
            await before?.value
            try? await store.save(snapshot)
            try? await store.removeFiles(except: snapshot.fileIDs)
        }
    }

    /// The writes and view counts under way have ended (tests).
    func settled() async {
        for task in work.running { await task.value }
        await lastSave?.value
    }

    static func pageKey(tag: String?, after: String?) -> String {
        "tag=\(tag ?? "")&after=\(after ?? "")"
    }

    /// A day as the server counts reads: UTC.
    static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    private static func byTitle(_ a: Article, _ b: Article) -> Bool {
        a.title.localizedStandardCompare(b.title) == .orderedAscending
    }

    private static func tags(of articles: [Article]) -> [String] {
        Set(articles.flatMap(\.tags)).sorted()
    }

    /// The held articles with every word of `query` in their title, text or tags (case and
    /// accents aside), those with them all in the title first.
    static func search(_ query: String, in articles: [Article]) -> [Article] {
        func fold(_ text: String) -> String { text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
        let words = fold(query).split { $0.isWhitespace || $0.isPunctuation }.map(String.init)
        guard !words.isEmpty else { return [] }
        var inTitle: [Article] = []
        var elsewhere: [Article] = []
        for article in articles {
            let title = fold(article.title)
            let body = title + "\n" + fold(article.text) + "\n" + fold(article.tags.joined(separator: " "))
            guard words.allSatisfy(body.contains) else { continue }
            if words.allSatisfy(title.contains) { inTitle.append(article) } else { elsewhere.append(article) }
        }
        return inTitle + elsewhere
    }
}
