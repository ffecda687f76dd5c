import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

@Suite("The user's data: export")
struct DataExportTests {
    /// The export is the conversation exactly as `GET /v1/messages` shows it (notes left out,
    /// attachments as ThreadDesk URLs), in bounded pages, with what ThreadDesk keeps about the user
    /// — secrets only by whether they exist.
    @Test func theExportIsTheConversationAndTheKeptFacts() async throws {
        try await withServer { server in
            let (user, thread, device) = try await server.userWithThread(first: "my first words")
            let installation = #"{"appVersion":"2.1.0","osPlatform":"iOS","theme":"dark"}"#
            #expect(try await server.request(.put, "/v1/installation", token: user.token, json: installation).status == .ok)
            let withFile = try await AttachmentTests.send(
                server, token: user.token,
                [.init(name: "content", data: Data("a screenshot".utf8)), .init(name: "files", filename: "s.png", contentType: "image/png", data: AttachmentTests.png())])
            #expect(withFile.status == .created)
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Thanks, looking")
            let note = try server.emulator.postNote(inThread: thread, content: "internal only")
            try server.emulator.replyAsAgent(inThread: thread, content: "Fixed in 2.2")
            let shown = try await server.messages(token: user.token, query: "?limit=100")
            #expect(shown.count == 4)
            #expect(try await server.request(.post, "/v1/read", token: user.token, json: #"{"messageId":"\#(reply.id)"}"#).status == .ok)

            var pages: [DataExport] = []
            var after: String?
            repeat {
                let reply = try await server.request(.get, "/v1/me/export?limit=3" + (after.map { "&after=\($0)" } ?? ""), token: user.token)
                #expect(reply.status == .ok)
                let body = String(decoding: reply.body, as: UTF8.self)
                #expect(!body.contains(device) && !body.contains(user.token) && !body.contains(UserToken.hash(user.token)), "no secret")
                let page = try reply.decode(DataExport.self)
                pages.append(page)
                after = page.messages.last?.id
                if pages.count > 5 { break }
            } while pages.last?.hasMore == true
            #expect(pages.map(\.messages.count) == [3, 1])

            let exported = pages.flatMap(\.messages)
            let listed = try JSONDecoder().decode(MessagePage.self, from: try await server.request(.get, "/v1/messages?limit=100", token: user.token).body)
            #expect(exported == listed.messages, "as the API shows it")
            #expect(!exported.contains { $0.id == note.id || $0.content.contains("internal only") }, "notes are not the user's")
            let file = try #require(exported.first { !$0.attachments.isEmpty }?.attachments.first)
            #expect(file.url == "/v1/attachments/\(file.id)")

            let facts = try #require(pages.first?.user)
            #expect(facts.userId == user.userId && facts.threadId == thread)
            #expect(facts.pushTokenRegistered && facts.pushEnvironment == "development")
            #expect(facts.installation?["appVersion"] == "2.1.0" && facts.installation?["theme"] == "dark")
            #expect(facts.lastReadMessageId == reply.id)
            let unread = try await server.request(.get, "/v1/unread", token: user.token).json["count"]?.intValue
            #expect(facts.unreadCount == unread && unread == 1)
            #expect(facts.liveSessions == 1)
            #expect(try await server.metric("threaddesk_export_pages_total") == 2)
        }
    }

    /// A user who never wrote: the facts, and an empty conversation.
    @Test func aUserWithNothingYetGetsTheFactsAlone() async throws {
        try await withServer { server in
            let user = try await server.session()
            let page = try await server.request(.get, "/v1/me/export", token: user.token).decode(DataExport.self)
            #expect(page.messages.isEmpty && !page.hasMore)
            #expect(page.user.userId == user.userId && !page.user.pushTokenRegistered && page.user.pushEnvironment == nil)
            #expect(page.user.threadId == nil && page.user.unreadCount == 0)
        }
    }

    /// Hostile queries are 400s with the API's JSON error, never a 5xx or a page.
    @Test func hostileQueriesAreRefused() async throws {
        try await withServer { server in
            let user = try await server.session()
            let refusals: [(String, String)] = [
                ("after=abc", "invalid_after"), ("after=-1", "invalid_after"), ("after=99999999999999999999", "invalid_after"),
                ("after=18446744073709551615", "invalid_after"), ("after=1%00", "invalid_after"),
                ("limit=0", "invalid_limit"), ("limit=1001", "invalid_limit"), ("limit=x", "invalid_limit"), ("limit=", "invalid_limit"),
                ("limit=99999999999999999999999", "invalid_limit"),
            ]
            for (query, code) in refusals {
                let reply = try await server.request(.get, "/v1/me/export?\(query)", token: user.token)
                #expect(reply.status == .badRequest && reply.errorCode == code, "\(query): \(reply.status)")
            }
            let anonymous = try await server.request(.get, "/v1/me/export")
            #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthorized")
            #expect(try await server.request(.get, "/v1/me/export?limit=1000&after=1", token: user.token).status == .ok)
        }
    }
}
