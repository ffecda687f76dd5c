import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// The help center: the FAQ forum's answers as articles, from memory, with validators; reads
/// counted once per user, article and UTC day; the most read in support's numbers.
@Suite("The help center's articles", .timeLimit(.minutes(3)))
struct ArticleTests {
    /// Titles in mixed case, two the same but for case (their order is their ids'), some tagged.
    static let titles = [
        "Zebra mode explained", "apple pay fails", "Mango sync", "banana export", "Same title", "same title", "Cancel my subscription",
        "I can't connect my TV", "Backup my data", "dark mode", "Export to PDF", "Forgot my password", "Change the language",
        "Delete my account", "Notifications are late", "Offline reading", "Pair a watch", "Restore purchases", "Share a list",
        "Two devices", "Update the app", "Widgets on the home screen", "Yearly plan", "Refund a purchase",
    ]

    static func tags(_ title: String) -> [String] {
        if ["Cancel my subscription", "Restore purchases", "Yearly plan", "Refund a purchase"].contains(title) { return ["billing"] }
        if ["I can't connect my TV", "Pair a watch"].contains(title) { return ["television"] }
        return []
    }

    static let screenshot = AttachmentTests.png()

    static let forum = EmulatorPreparation { emulator, configuration in
        configuration.faqChannelID = emulator.faqChannelID
        for title in titles {
            let answer = title == "I can't connect my TV" ? "Open Settings › Devices › Add by hand.\nkeywords: chromecast, smart tv" : "The answer to \(title.lowercased())."
            let files: [DiscordEmulator.UploadedFile] =
                title == "Export to PDF" ? [.init(filename: "export.png", contentType: "image/png", data: screenshot)] : []
            _ = try emulator.postFAQ(title: title, answer: answer, tags: tags(title), attachments: files)
        }
    }

    static func get(_ server: Harness, _ uri: String, token: String, etag: String? = nil) async throws -> Harness.Reply {
        try await server.request(.get, uri, token: token, headers: etag.map { [.ifNoneMatch: $0] } ?? [:])
    }

    /// Every page of `uri` (`?` already in it, or not), following `next`.
    static func all(_ server: Harness, _ uri: String, token: String) async throws -> [JSON] {
        var articles: [JSON] = []
        var after: String?
        for _ in 0..<100 {
            let separator = uri.contains("?") ? "&" : "?"
            let reply = try await get(server, uri + (after.map { "\(separator)after=\($0)" } ?? ""), token: token)
            try #require(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
            articles += reply.json["articles"]?.arrayValue ?? []
            guard let next = reply.json["next"]?.stringValue else { return articles }
            after = next
        }
        Issue.record("more than 100 pages")
        return articles
    }

    static func ids(_ articles: [JSON]) -> [String] { articles.compactMap { $0["id"]?.stringValue } }

    static func discordRequests(_ server: Harness) -> Int { server.emulator.counters.requestsByRoute.values.reduce(0, +) }

    @Test func articlesComeByTitlePageByPageWithTagsAndTheSuggestionsRankingFromMemory() async throws {
        try await withServer(prepare: Self.forum) { server in
            let user = try await server.session()
            try await server.settled()
            let before = Self.discordRequests(server)

            let first = try await Self.get(server, "/v1/articles", token: user.token)
            #expect(first.status == .ok)
            let page = try first.decode(ArticlePage.self)
            #expect(page.articles.count == ArticlePage.defaultLimit && page.next != nil)
            #expect(page.tags == ["billing", "television"])
            // Every article once, by title in any case, then by id.
            let everything = try await Self.all(server, "/v1/articles?limit=7", token: user.token)
            #expect(everything.count == Self.titles.count)
            let expected = everything.sorted {
                let (a, b) = ($0["title"]?.stringValue?.lowercased() ?? "", $1["title"]?.stringValue?.lowercased() ?? "")
                return a != b ? a < b : UInt64($0["id"]?.stringValue ?? "")! < UInt64($1["id"]?.stringValue ?? "")!
            }
            #expect(Self.ids(everything) == Self.ids(expected))
            #expect(everything.compactMap { $0["title"]?.stringValue }.prefix(3) == ["apple pay fails", "Backup my data", "banana export"])
            #expect(Self.ids(try await Self.all(server, "/v1/articles?limit=100", token: user.token)) == Self.ids(everything))

            // By tag, any case; an unknown tag has nothing.
            let billing = try await Self.all(server, "/v1/articles?tag=BILLING&limit=3", token: user.token)
            #expect(billing.compactMap { $0["title"]?.stringValue } == ["Cancel my subscription", "Refund a purchase", "Restore purchases", "Yearly plan"])
            #expect(try await Self.all(server, "/v1/articles?tag=nothing", token: user.token).isEmpty)

            // One article: the keywords line is no part of it, its file is served through ThreadDesk.
            let tv = try #require(everything.first { $0["title"]?.stringValue == "I can't connect my TV" })
            let article = try await Self.get(server, "/v1/articles/\(tv["id"]?.stringValue ?? "")", token: user.token).decode(Article.self)
            #expect(article.text == "Open Settings › Devices › Add by hand." && article.tags == ["television"])
            #expect(try Date(article.updatedAt, strategy: .iso8601) <= Date())
            let pdf = try #require(everything.first { $0["title"]?.stringValue == "Export to PDF" })
            let url = try #require(pdf["attachments"]?[0]?["url"]?.stringValue)

            // A search ranks as the suggestions do, and pages on past their five.
            for query in ["subscription", "cancel", "cant conect tv", "purchase", "answer", "mode", "export"] {
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let found = try await Self.all(server, "/v1/articles?q=\(encoded)&limit=2", token: user.token)
                let suggested = try await server.request(.get, "/v1/suggestions?q=\(encoded)", token: user.token).json["suggestions"]?.arrayValue ?? []
                #expect(!found.isEmpty, "\(query)")
                #expect(Array(Self.ids(found).prefix(5)) == Self.ids(suggested), "\(query)")
                #expect(Set(Self.ids(found)).count == found.count, "\(query): no article twice")
            }
            let billed = try await Self.all(server, "/v1/articles?q=purchase&tag=billing", token: user.token)
            #expect(Set(billed.compactMap { $0["title"]?.stringValue }) == ["Restore purchases", "Refund a purchase"])
            // All of it from memory.
            #expect(Self.discordRequests(server) == before)

            let file = try await server.request(.get, url, token: user.token)
            #expect(file.status == .ok && file.body == Self.screenshot)
        }
    }

    @Test func validatorsAnswer304UntilAPostChangesAppearsOrLeaves() async throws {
        try await withServer(gateway: true, prepare: Self.forum) { server in
            let user = try await server.session()
            try await SuggestionTests.settled(server, posts: Self.titles.count)
            let list = try await Self.get(server, "/v1/articles?tag=billing", token: user.token)
            let etag = try #require(list.headers[.eTag])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && !etag.hasPrefix("W/"))
            let again = try await Self.get(server, "/v1/articles?tag=billing", token: user.token, etag: etag)
            #expect(again.status == .notModified && again.body.isEmpty && again.headers[.eTag] == etag)
            #expect(try await Self.get(server, "/v1/articles?tag=billing", token: user.token, etag: "\"other\", W/\(etag)").status == .notModified)
            // Other parameters, another page: another validator.
            #expect(try await Self.get(server, "/v1/articles?tag=billing&limit=2", token: user.token, etag: etag).status == .ok)
            let post = try #require(list.json["articles"]?[0]?["id"]?.stringValue)
            let one = try await Self.get(server, "/v1/articles/\(post)", token: user.token)
            let articleTag = try #require(one.headers[.eTag])
            let updatedAt = try #require(one.json["updatedAt"]?.stringValue)
            #expect(try await Self.get(server, "/v1/articles/\(post)", token: user.token, etag: articleTag).status == .notModified)
            let search = try await Self.get(server, "/v1/articles?q=purchase", token: user.token)
            let searchTag = try #require(search.headers[.eTag])

            // An edit through Discord: new validators, the new words, a later updatedAt.
            try server.emulator.editMessage(post, inChannel: post, content: "Settings › Plan › Cancel.")
            try await server.settled()
            let edited = try await Self.get(server, "/v1/articles/\(post)", token: user.token, etag: articleTag)
            #expect(edited.status == .ok && edited.json["text"]?.stringValue == "Settings › Plan › Cancel.")
            #expect(edited.headers[.eTag] != articleTag)
            let later = try #require(edited.json["updatedAt"]?.stringValue)
            #expect(try Date(later, strategy: .iso8601) >= Date(updatedAt, strategy: .iso8601) && later != updatedAt)
            #expect(try await Self.get(server, "/v1/articles?tag=billing", token: user.token, etag: etag).status == .ok)
            #expect(try await Self.get(server, "/v1/articles?q=purchase", token: user.token, etag: searchTag).status == .ok)

            // A new post appears; a deleted one leaves (and its id is no article any more).
            let new = try server.emulator.postFAQ(title: "Apply a coupon", answer: "Settings › Plan › Coupon.", tags: ["billing"])
            try await server.settled()
            #expect(Self.ids(try await Self.all(server, "/v1/articles?tag=billing", token: user.token)).first == new)
            try server.emulator.deleteThread(post)
            try await server.settled()
            #expect(!Self.ids(try await Self.all(server, "/v1/articles", token: user.token)).contains(post))
            let gone = try await Self.get(server, "/v1/articles/\(post)", token: user.token, etag: articleTag)
            #expect(gone.status == .notFound && gone.errorCode == "article_not_found")
        }
    }

    @Test func everyBadParameterIsA400WithJSONAndNothingElse() async throws {
        try await withServer(prepare: Self.forum) { server in
            let user = try await server.session()
            try await server.settled()
            let next = try #require(try await Self.get(server, "/v1/articles?limit=1", token: user.token).json["next"]?.stringValue)
            let searchNext = try #require(try await Self.get(server, "/v1/articles?q=answer&limit=1", token: user.token).json["next"]?.stringValue)
            let cases: [(String, String)] = [
                ("/v1/articles?limit=0", "invalid_limit"), ("/v1/articles?limit=101", "invalid_limit"), ("/v1/articles?limit=x", "invalid_limit"),
                ("/v1/articles?limit=", "invalid_limit"), ("/v1/articles?limit=-1", "invalid_limit"), ("/v1/articles?limit=99999999999999999999", "invalid_limit"),
                ("/v1/articles?q=", "invalid_query"), ("/v1/articles?q=" + String(repeating: "a", count: 201), "invalid_query"),
                ("/v1/articles?q=a%00b", "invalid_query"), ("/v1/articles?tag=", "invalid_query"),
                ("/v1/articles?tag=" + String(repeating: "t", count: 101), "invalid_query"), ("/v1/articles?tag=a%01", "invalid_query"),
                ("/v1/articles?after=", "invalid_after"), ("/v1/articles?after=%%%", "invalid_after"), ("/v1/articles?after=bm90LWEtY3Vyc29y", "invalid_after"),
                ("/v1/articles?after=" + String(repeating: "A", count: 2000), "invalid_after"),
                // A listing's cursor in a search, and a search's in a listing.
                ("/v1/articles?q=answer&after=\(next)", "invalid_after"), ("/v1/articles?after=\(searchNext)", "invalid_after"),
                ("/v1/articles/abc", "invalid_article_id"), ("/v1/articles/123456789012345678901", "invalid_article_id"),
                ("/v1/articles/-1", "invalid_article_id"),
            ]
            for (uri, code) in cases {
                let reply = try await Self.get(server, uri, token: user.token)
                #expect(reply.status == .badRequest && reply.errorCode == code, "\(uri): \(reply.status) \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
                #expect(reply.headers[.contentType]?.hasPrefix("application/json") == true && reply.headers[.eTag] == nil, "\(uri)")
            }
            let unknown = try await Self.get(server, "/v1/articles/123", token: user.token)
            #expect(unknown.status == .notFound && unknown.errorCode == "article_not_found")
            for (method, uri) in [(HTTPRequest.Method.post, "/v1/articles/123/views"), (.post, "/v1/articles/x/views")] {
                let reply = try await server.request(method, uri, token: user.token)
                #expect(reply.status == (uri.contains("x") ? .badRequest : .notFound), "\(uri)")
            }
            #expect(try await server.request(.get, "/v1/articles").status == .unauthorized)
            #expect(try await server.request(.get, "/v1/articles/123").status == .unauthorized)
            #expect(try await server.request(.post, "/v1/articles/123/views").status == .unauthorized)
            // Nothing was counted for an article that is none.
            #expect(try await server.store.articleReadTotals(app: .default, since: .distantPast, limit: 10).isEmpty)
        }
    }

    @Test func withoutAFAQForumTheHelpCenterIsEmpty() async throws {
        try await withServer { server in
            let user = try await server.session()
            let reply = try await Self.get(server, "/v1/articles", token: user.token)
            #expect(reply.status == .ok && reply.headers[.eTag] != nil)
            let page = try reply.decode(ArticlePage.self)
            #expect(page.articles.isEmpty && page.tags.isEmpty && page.next == nil)
            #expect(try await Self.get(server, "/v1/articles?q=tv", token: user.token).status == .ok)
        }
    }

    /// One app's articles are never served, found or counted for another app's users.
    @Test func eachAppsUsersSeeOnlyItsOwnArticles() async throws {
        let prepare = EmulatorPreparation { emulator, configuration in
            try await AppsTests.twoApps().apply(emulator, &configuration)
            let endpoints = await emulator.endpoints()
            let admin = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
            let betaFAQ = try await admin.createForum(guildID: endpoints.guildID, name: "beta-faq", tags: ["billing"])
            configuration.apps?[0].faqChannelID = emulator.faqChannelID
            configuration.apps?[1].faqChannelID = betaFAQ.id
            _ = try emulator.postFAQ(title: "Cancel my alpha subscription", answer: "Alpha: the App Store manages it.", tags: ["billing"])
            _ = try emulator.postFAQ(title: "Cancel my beta subscription", answer: "Beta: Settings › Plan.", tags: ["billing"], in: betaFAQ.id)
        }
        try await withServer(prepare: prepare, apnsTopics: [AppsTests.betaTopic]) { server in
            let apps = server.configuration.catalog.apps
            let a = try await AppsTests.open(server, key: apps[0].appKey, user: "same").decode(Harness.Session.self)
            let b = try await AppsTests.open(server, key: apps[1].appKey, user: "same").decode(Harness.Session.self)
            try await server.settled()
            let alpha = try await Self.all(server, "/v1/articles", token: a.token)
            let beta = try await Self.all(server, "/v1/articles", token: b.token)
            #expect(alpha.compactMap { $0["title"]?.stringValue } == ["Cancel my alpha subscription"])
            #expect(beta.compactMap { $0["title"]?.stringValue } == ["Cancel my beta subscription"])
            #expect(Self.ids(try await Self.all(server, "/v1/articles?q=cancel", token: a.token)) == Self.ids(alpha))
            let betaID = try #require(Self.ids(beta).first)
            #expect(try await Self.get(server, "/v1/articles/\(betaID)", token: a.token).status == .notFound)
            #expect(try await server.request(.post, "/v1/articles/\(betaID)/views", token: a.token).status == .notFound)
            #expect(try await server.request(.post, "/v1/articles/\(betaID)/views", token: b.token).json["counted"]?.boolValue == true)
            #expect(try await server.store.articleReadTotals(app: apps[0].id, since: .distantPast, limit: 10).isEmpty)
            #expect(try await server.store.articleReadTotals(app: apps[1].id, since: .distantPast, limit: 10).map(\.reads) == [1])
        }
    }

    /// Monday 2026-12-07 22:00 UTC: two hours before the next UTC day.
    static let evening = try! Date("2026-12-07T22:00:00Z", strategy: .iso8601)

    @Test func aReadIsCountedOncePerUserArticleAndUTCDayAndTheMostReadReachTheStats() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock, from: Self.evening), prepare: Self.forum) { server in
            try await server.settled(driving: clock)
            let (reader, writer) = (try await server.session(), try await server.session())
            let everything = try await Self.all(server, "/v1/articles?limit=100", token: reader.token)
            let id = { (title: String) in everything.first { $0["title"]?.stringValue == title }?["id"]?.stringValue ?? "" }
            let (tv, refund) = (id("I can't connect my TV"), id("Refund a purchase"))
            func view(_ article: String, _ token: String) async throws -> Bool? {
                let reply = try await server.request(.post, "/v1/articles/\(article)/views", token: token)
                #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
                return try reply.decode(ArticleView.self).counted
            }
            #expect(try await view(tv, reader.token) == true)
            #expect(try await view(tv, reader.token) == false)
            #expect(try await view(refund, reader.token) == true)
            #expect(try await view(tv, writer.token) == true)
            // The writer wrote to support right after reading: the article was not enough.
            clock.advance(by: .seconds(120))
            #expect(try await server.send("The TV still does not connect", token: writer.token).status == .created)
            // Past midnight UTC: a new day, counted again.
            clock.advance(by: .seconds(2 * 3600))
            #expect(try await view(tv, reader.token) == true)
            #expect(try await view(tv, reader.token) == false)
            clock.advance(by: .seconds(3600))
            try await server.settled(driving: clock)

            let token = HTTPFields([.init(name: .authorization, value: "Bearer \(Harness.metricsToken)")])
            let stats = try await server.request(.get, "/internal/stats?days=7", headers: token).decode(SupportStats.self)
            #expect(
                stats.mostReadArticles == [
                    .init(id: tv, title: "I can't connect my TV", reads: 3, withoutMessage: 2),
                    .init(id: refund, title: "Refund a purchase", reads: 1, withoutMessage: 1),
                ])
            let text = StatsCommands.text(stats)
            #expect(text.contains("Most read articles") && text.contains("• I can't connect my TV: 3, 2 without"))
        }
    }
}
