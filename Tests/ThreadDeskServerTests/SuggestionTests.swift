import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer

/// Curated answers: the FAQ forum's posts, suggested while the user types, from memory.
@Suite("Suggestions from the FAQ forum", .timeLimit(.minutes(2)))
struct SuggestionTests {
    static let faq = EmulatorPreparation { emulator, configuration in configuration.faqChannelID = emulator.faqChannelID }

    static func titles(_ server: Harness, _ query: String, token: String) async throws -> [String] {
        let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let reply = try await server.request(.get, "/v1/suggestions?q=\(encoded)", token: token)
        guard reply.status == .ok else { throw HarnessError.unexpected(reply.status, String(decoding: reply.body, as: UTF8.self)) }
        return (reply.json["suggestions"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue }
    }

    static func discordRequests(_ server: Harness) -> Int { server.emulator.counters.requestsByRoute.values.reduce(0, +) }

    static func forumReads(_ server: Harness) -> Int { server.emulator.counters.requests("GET", "/channels/{channel_id}/threads/archived/public") }

    /// The forum read at start and again after the gateway's first session (a gap: events before
    /// it may be missed), every starter fetched at least once (the second read fetches again only
    /// those the first had fetched before the session began): `posts` posts known before the start.
    static func settled(_ server: Harness, posts: Int) async throws {
        try await server.settled()
        try #require(server.emulator.counters.identifies >= 1, "the gateway up")
        try await server.settled()
        try #require(forumReads(server) >= 2 && server.emulator.counters.requests("GET", "/channels/{channel_id}/messages/{message_id}") >= posts, "the FAQ forum read at start and after the gateway's first session")
    }

    @Test func postsWrittenBeforeStartAreFoundByAMisspelledQueryWithNoDiscordCall() async throws {
        // Written before the server starts: the REST load at start finds them, archived or not.
        let prepare = EmulatorPreparation { emulator, configuration in
            configuration.faqChannelID = emulator.faqChannelID
            let tv = try? emulator.postFAQ(
                title: "I can't connect my TV", answer: "Open Settings › Devices › Add by hand.\nkeywords: chromecast, smart tv",
                tags: ["television"])
            _ = try? emulator.postFAQ(title: "Cancel my subscription", answer: "The App Store manages it.", tags: ["billing"])
            if let tv { try? emulator.archiveThread(tv) }
        }
        try await withServer(gateway: true, prepare: prepare) { server in
            let user = try await server.session()
            try await Self.settled(server, posts: 2)
            try await server.settled()
            try #require(try await !Self.titles(server, "subscription", token: user.token).isEmpty, "the answers loaded")
            let before = Self.discordRequests(server)
            for _ in 0..<20 {
                #expect(try await Self.titles(server, "cant conect tv", token: user.token).first == "I can't connect my TV")
            }
            // The keywords line and the tag's name find it; neither is part of the answer.
            #expect(try await Self.titles(server, "chromecast", token: user.token) == ["I can't connect my TV"])
            #expect(try await Self.titles(server, "televison", token: user.token) == ["I can't connect my TV"])
            #expect(try await Self.titles(server, "refund billing", token: user.token) == ["Cancel my subscription"])
            let reply = try await server.request(.get, "/v1/suggestions?q=tv%20add", token: user.token)
            let first = try #require(reply.json["suggestions"]?.arrayValue?.first)
            #expect(first["answer"]?.stringValue == "Open Settings › Devices › Add by hand.")
            #expect(first["id"]?.stringValue?.isEmpty == false)
            #expect(Self.discordRequests(server) == before)
        }
    }

    @Test func createdEditedAndDeletedPostsChangeTheSuggestionsThroughTheGateway() async throws {
        try await withServer(gateway: true, prepare: Self.faq) { server in
            let user = try await server.session()
            try await Self.settled(server, posts: 0)
            let reads = Self.forumReads(server)
            #expect(try await Self.titles(server, "router", token: user.token).isEmpty)
            let post = try server.emulator.postFAQ(title: "Reset the router", answer: "Hold the button for ten seconds.")
            try await server.settled()
            try #require(try await Self.titles(server, "ruoter", token: user.token) == ["Reset the router"], "the new post suggested")

            // An edit of the answer: the new words find it, the old ones no longer do.
            try server.emulator.editMessage(post, inChannel: post, content: "Unplug it for a minute.\nkeywords: modem")
            try await server.settled()
            try #require(try await Self.titles(server, "modem", token: user.token) == ["Reset the router"], "the edited answer")
            let reply = try await server.request(.get, "/v1/suggestions?q=modem", token: user.token)
            #expect(reply.json["suggestions"]?[0]?["answer"]?.stringValue == "Unplug it for a minute.")
            #expect(try await Self.titles(server, "ten seconds button", token: user.token).isEmpty)

            // A post of the support forum is no answer.
            let (_, _, _) = try await server.userWithThread(first: "my modem is broken")
            #expect(try await Self.titles(server, "modem broken", token: user.token) == ["Reset the router"])

            // Deleted: gone from the suggestions.
            try server.emulator.deleteThread(post)
            try await server.settled()
            try #require(try await Self.titles(server, "router", token: user.token).isEmpty, "the deleted post gone")
            // All of it came through the gateway's events: the forum was not read again.
            #expect(Self.forumReads(server) == reads)
        }
    }

    @Test func aMessageSentRightAfterASuggestionGetsANoteNamingIt() async throws {
        try await withServer(gateway: true, prepare: Self.faq) { server in
            let (user, thread, _) = try await server.userWithThread()
            let post = try server.emulator.postFAQ(title: "I can't connect my TV", answer: "Add it by hand.")
            try await server.settled()
            try #require(try await Self.titles(server, "tv", token: user.token) == ["I can't connect my TV"], "the answer suggested")
            let body = #"{"content":"Adding by hand did not work","suggestionId":"\#(post)"}"#
            let sent = try await server.request(.post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k1"], json: body)
            #expect(sent.status == .created)
            try await server.settled()  // the outbox delivers it, then the note
            // The note follows the user's message, by the bot, with a nonce; the user never sees it.
            let inDiscord = server.emulator.messages(inThread: thread)
            try #require(inDiscord.count >= 2)
            let note = try #require(inDiscord.last)
            #expect(note.content == ":ninja: The user was shown the suggested answer “I can't connect my TV” (<#\(post)>) right before writing this.")
            #expect(note.authorIsBot && note.nonce != nil)
            #expect(inDiscord[inDiscord.count - 2].content == "Adding by hand did not work")
            #expect(try await server.messages(token: user.token).compactMap { $0["content"]?.stringValue } == ["hello", "Adding by hand did not work"])
            // A retry of the same send posts neither again.
            let retried = try await server.request(.post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k1"], json: body)
            #expect(retried.status == .created)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == inDiscord.count)
            // An id that is no answer (any more) gets no note; one that is no id is refused.
            let unknown = #"{"content":"and now?","suggestionId":"123"}"#
            #expect(try await server.request(.post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k2"], json: unknown).status == .created)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).last?.content == "and now?")
            let bad = #"{"content":"x","suggestionId":"not-an-id"}"#
            let refused = try await server.request(.post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k3"], json: bad)
            #expect(refused.status == .badRequest && refused.errorCode == "invalid_suggestion_id")
        }
    }

    @Test func anAnswersFilesAreServedThroughThreadDesk() async throws {
        try await withServer(gateway: true, prepare: Self.faq) { server in
            let user = try await server.session()
            let screenshot = Data("a screenshot's bytes".utf8)
            try server.emulator.postFAQ(
                title: "Where is the export button?", answer: "Top right, see the picture.",
                attachments: [.init(filename: "export.png", contentType: "image/png", data: screenshot)])
            try await server.settled()
            try #require(try await !Self.titles(server, "export", token: user.token).isEmpty, "the answer suggested")
            let reply = try await server.request(.get, "/v1/suggestions?q=export", token: user.token)
            let file = try #require(reply.json["suggestions"]?[0]?["attachments"]?[0])
            #expect(file["filename"]?.stringValue == "export.png" && file["size"]?.intValue == screenshot.count)
            let url = try #require(file["url"]?.stringValue)
            #expect(url.hasPrefix("/v1/attachments/"))
            // Any user may fetch an answer's file, through ThreadDesk, never from Discord's CDN directly.
            let fetched = try await server.request(.get, url, token: user.token)
            #expect(fetched.status == .ok && fetched.body == screenshot)
            #expect(try await server.request(.get, url).status == .unauthorized)
        }
    }

    @Test func theQueryIsValidatedAndNeedsAToken() async throws {
        try await withServer(prepare: Self.faq) { server in
            let user = try await server.session()
            // One character of 500 scalars (a letter and its combining accents) is one character too many scalars.
            let heavy = "e" + String(repeating: "%CC%81", count: 500)
            for uri in [
                "/v1/suggestions", "/v1/suggestions?q=", "/v1/suggestions?q=" + String(repeating: "a", count: 201), "/v1/suggestions?q=a%00b",
                "/v1/suggestions?q=" + heavy,
            ] {
                let reply = try await server.request(.get, uri, token: user.token)
                #expect(reply.status == .badRequest, "\(uri)")
                #expect(reply.errorCode == "invalid_query", "\(uri)")
            }
            #expect(try await server.request(.get, "/v1/suggestions?q=" + String(repeating: "a", count: 200), token: user.token).status == .ok)
            #expect(try await server.request(.get, "/v1/suggestions?q=tv").status == .unauthorized)
        }
    }

    @Test func withoutAFAQForumThereAreNoSuggestions() async throws {
        try await withServer { server in
            let user = try await server.session()
            let reply = try await server.request(.get, "/v1/suggestions?q=tv", token: user.token)
            #expect(reply.status == .ok)
            #expect(reply.json == ["suggestions": []])
        }
    }
}
