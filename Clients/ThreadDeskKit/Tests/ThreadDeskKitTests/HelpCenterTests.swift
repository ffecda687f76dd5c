import Foundation
import Observation
import Testing
@testable import ThreadDeskKit

/// The help center model against a real HTTP server, observed as a screen observes it
/// (`withObservationTracking`): pages arriving, search where the latest query wins, 304s that keep
/// the device's copy, offline reading from it, a read counted once a day (the date the test's).
@Suite("HelpCenter")
@MainActor
struct HelpCenterTests {
    static let export = Article(
        id: "1311000000000000101", title: "How do I export a report?", text: "Use File ▸ Export, then pick PDF.", tags: ["reports"],
        attachments: [.init(id: "901", filename: "export.png", size: 4, contentType: "image/png", url: "/v1/attachments/901")],
        updatedAt: "2026-12-01T10:00:00Z")
    static let refund = Article(
        id: "1311000000000000102", title: "Can I get a refund?", text: "Yes, within 30 days of the purchase.", tags: ["billing"],
        attachments: [], updatedAt: "2026-12-02T10:00:00Z")
    static let invoices = Article(
        id: "1311000000000000103", title: "Where are my invoices?", text: "Settings ▸ Billing lists them.", tags: ["billing"],
        attachments: [], updatedAt: "2026-12-03T10:00:00Z")

    static func json(_ value: some Encodable) -> String {
        String(decoding: try! JSONEncoder().encode(value), as: UTF8.self)
    }

    static func page(_ articles: [Article], next: String? = nil, etag: String? = nil) -> LocalHTTPServer.Answer {
        .init(status: 200, headers: etag.map { ["ETag": $0] } ?? [:], body: json(ArticlePage(articles: articles, tags: ["billing", "reports"], next: next)))
    }

    static func answer(_ article: Article, etag: String) -> LocalHTTPServer.Answer {
        .init(status: 200, headers: ["ETag": etag], body: json(article))
    }

    static let notModified = LocalHTTPServer.Answer(status: 304, body: "")
    static let counted = LocalHTTPServer.Answer(status: 200, body: #"{"counted":true}"#)

    /// A day the test moves by hand.
    final class Today: Sendable {
        let date = Locked(Date(timeIntervalSince1970: 1_796_630_400))  // 2026-12-07T08:00:00Z
        func next() { date.withLock { $0 += 86_400 } }
    }

    static func helpCenter(
        _ server: LocalHTTPServer?, store: any HelpCenterStore = InMemoryHelpCenterStore(), today: Today = Today()
    ) async throws -> HelpCenter {
        var options = HelpCenter.Options()
        options.searchDelay = .zero
        return HelpCenter(
            client: try await UserContextTests.client(server), store: store, options: options, clock: ContinuousClock(),
            now: { today.date.current })
    }

    static func paths(_ server: LocalHTTPServer) -> [String] {
        server.requests.current.map { "\($0.method) \($0.path)" }
    }

    // MARK: Browsing

    @Test func aPageArrivingIsObservedWithItsTagsAndTheNextPageAppends() async throws {
        let server = try LocalHTTPServer(answers: [Self.page([Self.refund], next: "c1", etag: #""p1""#), Self.page([Self.invoices])])
        defer { server.stop() }
        let help = try await Self.helpCenter(server)
        #expect(await RatingTests.observes({ _ = help.articles }) { await help.browse(tag: "billing") })
        #expect(help.articles == [Self.refund] && help.tags == ["billing", "reports"] && help.hasMore && help.selectedTag == "billing")
        #expect(await RatingTests.observes({ _ = help.articles }) { await help.loadMore() })
        #expect(help.articles == [Self.refund, Self.invoices] && !help.hasMore)
        #expect(Self.paths(server) == ["GET /v1/articles?limit=20&tag=billing", "GET /v1/articles?limit=20&tag=billing&after=c1"])
        #expect(server.requests.current.first?.headers["authorization"] == "Bearer token-1")
    }

    @Test func a304KeepsTheDevicesPageAcrossARestart() async throws {
        let server = try LocalHTTPServer(answers: [Self.page([Self.export, Self.refund], etag: #""p1""#), Self.notModified, Self.notModified])
        defer { server.stop() }
        let store = InMemoryHelpCenterStore()
        let help = try await Self.helpCenter(server, store: store)
        await help.browse()
        await help.browse()
        #expect(help.articles == [Self.export, Self.refund] && !help.isOffline && help.lastError == nil)
        await help.settled()
        // Launched again: the kept page shows, and the server's 304 keeps it.
        let relaunched = try await Self.helpCenter(server, store: store)
        let shown = ArticleLog(relaunched)
        await relaunched.browse()
        #expect(relaunched.articles == [Self.export, Self.refund])
        #expect(shown.lists == [[], [Self.export.id, Self.refund.id]], "shown once, from the device, and not changed by the 304")
        let requests = server.requests.current
        #expect(requests.map(\.headers["if-none-match"]) == [nil, #""p1""#, #""p1""#])
    }

    // MARK: Searching

    @Test func aSlowerEarlierSearchNeverOverwritesTheLatestQuerysResults() async throws {
        let slow = LocalHTTPServer.Hold()
        let server = try LocalHTTPServer(answers: [Self.page([Self.refund, Self.invoices]).held(slow), Self.page([Self.export])])
        defer { server.stop() }
        let help = try await Self.helpCenter(server)
        let first = Task { await help.search("re") }
        try await until { slow.hasArrived }
        #expect(await RatingTests.observes({ _ = help.results }) { await help.search("export") })
        #expect(help.results == [Self.export])
        let log = ArticleLog(help, results: true)
        slow.release()
        await first.value
        #expect(help.results == [Self.export] && help.query == "export" && !help.isSearching)
        #expect(log.lists == [[Self.export.id]], "the earlier answer changed nothing")
        #expect(Self.paths(server) == ["GET /v1/articles?limit=20&q=re", "GET /v1/articles?limit=20&q=export"])
        // A blank query has no results and asks nothing.
        await help.search("  ")
        #expect(help.results.isEmpty && server.requests.current.count == 2)
    }

    // MARK: Offline

    @Test func offlineTheLastPagesAndReadArticlesShowAndSearchLooksThroughThem() async throws {
        let server = try LocalHTTPServer(answers: [
            Self.page([Self.export, Self.refund], etag: #""p1""#), Self.answer(Self.invoices, etag: #""a3""#), Self.counted,
        ])
        let store = InMemoryHelpCenterStore()
        let online = try await Self.helpCenter(server, store: store)
        await online.browse()
        _ = try await online.article(Self.invoices.id)
        await online.settled()
        server.stop()

        // No server any more (a closed port): what the device kept.
        let help = try await Self.helpCenter(nil, store: store)
        await help.browse()
        #expect(help.articles == [Self.export, Self.refund] && help.isOffline && help.lastError?.kind == .transport)
        #expect(try await help.article(Self.invoices.id) == Self.invoices)
        #expect(try await help.article(Self.refund.id) == Self.refund, "listed on a kept page")
        await #expect(throws: ThreadDeskError.self) { try await help.article("1311000000000000999") }
        await help.search("billing invoices")
        #expect(help.results == [Self.invoices])
        await help.search("REFUND")
        #expect(help.results == [Self.refund])
        // A tag never browsed: the held articles that carry it, by title.
        await help.browse(tag: "billing")
        #expect(help.articles == [Self.refund, Self.invoices])
    }

    // MARK: Reading

    @Test func aReadIsCountedOnceADayOnTheDevice() async throws {
        let server = try LocalHTTPServer(answers: [
            Self.answer(Self.export, etag: #""a1""#), Self.counted, Self.notModified, Self.notModified, Self.counted,
        ])
        defer { server.stop() }
        let today = Today()
        let help = try await Self.helpCenter(server, today: today)
        #expect(try await help.article(Self.export.id) == Self.export)
        await help.settled()
        #expect(try await help.article(Self.export.id) == Self.export)
        await help.settled()
        today.next()
        #expect(try await help.article(Self.export.id) == Self.export)
        await help.settled()
        let id = Self.export.id
        #expect(Self.paths(server) == [
            "GET /v1/articles/\(id)", "POST /v1/articles/\(id)/views", "GET /v1/articles/\(id)", "GET /v1/articles/\(id)",
            "POST /v1/articles/\(id)/views",
        ])
        #expect(server.requests.current[2].headers["if-none-match"] == #""a1""#)
    }

    @Test func anArticlesImageIsFetchedWithTheTokenOnceAndKept() async throws {
        let server = try LocalHTTPServer(answers: [.init(status: 200, headers: ["Content-Type": "image/png"], body: "PNG!")])
        defer { server.stop() }
        let help = try await Self.helpCenter(server)
        let image = try #require(Self.export.attachments.first)
        #expect(try await help.data(for: image) == Data("PNG!".utf8))
        #expect(try await help.data(for: image) == Data("PNG!".utf8))
        #expect(Self.paths(server) == ["GET /v1/attachments/901"])
        #expect(server.requests.current.first?.headers["authorization"] == "Bearer token-1")
    }

    @Test func aGoneArticleThrowsAndAnIDThatIsNoneIsNotSent() async throws {
        let server = try LocalHTTPServer(answers: [.init(status: 404, body: #"{"error":{"code":"article_not_found","message":"gone"}}"#)])
        defer { server.stop() }
        let help = try await Self.helpCenter(server)
        let gone = await #expect(throws: ThreadDeskError.self) { try await help.article("1311000000000000999") }
        #expect(gone?.code == .articleNotFound && !help.isOffline)
        let refused = await #expect(throws: ThreadDeskError.self) { try await help.article("../attachments/1") }
        #expect(refused?.kind == .invalidInput && refused?.code == .invalidArticleId)
        #expect(server.requests.current.count == 1)
    }

    // MARK: Still need help?

    @Test func stillNeedingHelpNamesTheArticleWithTheNextMessageOnce() async throws {
        // No server (every send stays in the outbox): what each message would carry.
        let conversation = SupportConversation(
            client: try await UserContextTests.client(nil), store: nil, options: .init(), clock: ContinuousClock())
        conversation.stillNeedHelp(article: Self.export)
        // A draft written and cleared meanwhile does not lose it.
        conversation.draft = "hm"
        conversation.draft = ""
        conversation.draft = "Still broken"
        conversation.send()
        conversation.draft = "And another thing"
        conversation.send()
        let client = conversation.client
        try await until { (try? await client.pendingMessages().count) == 2 }
        let entries = try await client.pendingMessages()
        #expect(entries.map(\.text) == ["Still broken", "And another thing"])
        #expect(entries.map(\.suggestionID) == [Self.export.id, nil])
        await conversation.stop()
    }
}

/// Every list of articles (or results) a screen would have shown, through `withObservationTracking`.
@MainActor
final class ArticleLog {
    let help: HelpCenter
    let results: Bool
    private(set) var lists: [[String]] = []

    init(_ help: HelpCenter, results: Bool = false) {
        self.help = help
        self.results = results
        record()
    }

    private func record() {
        let ids = withObservationTracking { (results ? help.results : help.articles).map(\.id) } onChange: { [weak self] in
            Task { @MainActor in self?.record() }
        }
        if lists.last != ids { lists.append(ids) }
    }
}
