import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("What the user sees")
struct VisibilityTests {
    @Test func supportRepliesShowNotesAndBotNotesDoNot() async throws {
        try await withServer { server in
            let user = try await server.session(#"{"installation":{"appVersion":"2.0"}}"#)
            let first = try await server.send("hello", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            try server.emulator.postNote(inThread: thread, content: "internal: check their plan")
            try server.emulator.replyAsAgent(inThread: thread, content: "  !HiddenMessage also internal")
            try server.emulator.replyAsAgent(inThread: thread, content: "   :ninja: indented note")
            // The agent answers the user's post in Discord (Discord's id of it, which stays inside).
            let posted = try #require(server.emulator.messages(inThread: thread).first { $0.content == "hello" })
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Thanks, looking into it", replyingTo: posted.id)
            let file = try server.emulator.replyAsAgent(
                inThread: thread, content: "",
                attachments: [.init(filename: "fix.png", contentType: "image/png", data: Data([0x89, 0x50, 0x4E, 0x47]))])
            #expect(try await server.request(
                .post, "/v1/diagnostics", token: user.token, json: #"{"appVersion":"2.0"}"#).status == .created)

            let seen = try await server.messages(token: user.token)
            #expect(seen.map { $0["id"]?.stringValue } == [first.json["id"]?.stringValue, reply.id, file.id])
            #expect(seen.map { $0["author"]?.stringValue } == ["user", "support", "support"])
            #expect(seen[1]["authorName"]?.stringValue?.isEmpty == false)
            #expect(seen[0]["authorName"] == nil)
            // The reply names the user's message by the id the app knows.
            #expect(seen[1]["replyTo"] == first.json["id"])
            let attachment = try #require(seen[2]["attachments"]?[0])
            #expect(attachment["filename"] == "fix.png")
            #expect(attachment["size"] == 4)
            #expect(attachment["contentType"] == "image/png")
            // ThreadDesk's own URL for the bytes, never Discord's CDN (its signed URLs expire).
            #expect(attachment["url"]?.stringValue == "/v1/attachments/\(attachment["id"]?.stringValue ?? "-")")
            // Support sees everything, including the device note and the diagnostics (delivered
            // from the outbox after the upload was answered).
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == 9)
        }
    }

    @Test func theUsersOwnMarkerTextStaysVisibleAndIsNoNoteInDiscord() async throws {
        try await withServer { server in
            let user = try await server.session()
            #expect(try await server.send(":ninja: I am a ninja", token: user.token).status == .created)
            #expect(try await server.send("🥷 me too", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            try server.emulator.replyAsAgent(inThread: thread, content: "🥷 a real note, typed in Discord's client")
            let seen = try await server.messages(token: user.token)
            #expect(seen.map { $0["content"]?.stringValue } == [":ninja: I am a ninja", "🥷 me too"])
            #expect(seen.map { $0["author"]?.stringValue } == ["user", "user"])
            // In Discord the agent sees the user's words behind a prefix no note has, not a ThreadDesk note.
            let posted = server.emulator.messages(inThread: thread).map(\.content)
            #expect(posted.contains("(user wrote) :ninja: I am a ninja"))
            #expect(posted.contains("(user wrote) 🥷 me too"))
        }
    }

    @Test func editsShowAndDeletionsDisappear() async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("hello", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "typo")
            let gone = try server.emulator.replyAsAgent(inThread: thread, content: "wrong thread, sorry")
            try server.emulator.editMessage(reply.id, inChannel: thread, content: "fixed")
            try server.emulator.deleteMessage(gone.id, inChannel: thread)
            let seen = try await server.messages(token: user.token)
            #expect(seen.map { $0["content"]?.stringValue } == ["hello", "fixed"])
            #expect(seen[1]["editedAt"]?.stringValue != nil)
        }
    }

    @Test func pagesOldestFirstWithHasMore() async throws {
        try await withServer { server in
            let user = try await server.session()
            var ids: [String] = []
            for index in 0..<6 {
                ids.append(try #require(try await server.send("m\(index)", token: user.token).json["id"]?.stringValue))
                if index == 2 {
                    let thread = try #require(try await server.thread(of: user.userId))
                    try server.emulator.postNote(inThread: thread, content: "a hidden note in the middle")
                }
            }
            let newest = try await server.request(.get, "/v1/messages?limit=2", token: user.token)
            #expect(newest.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids.suffix(2)))
            #expect(newest.json["hasMore"] == true)

            let older = try await server.request(.get, "/v1/messages?limit=3&before=\(ids[4])", token: user.token)
            #expect(older.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids[1...3]))
            #expect(older.json["hasMore"] == true)

            let oldest = try await server.request(.get, "/v1/messages?limit=3&before=\(ids[1])", token: user.token)
            #expect(oldest.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[0]])
            #expect(oldest.json["hasMore"] == false)

            let newer = try await server.request(.get, "/v1/messages?after=\(ids[1])&limit=3", token: user.token)
            #expect(newer.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids[2...4]))
            #expect(newer.json["hasMore"] == true)

            let window = try await server.request(.get, "/v1/messages?after=\(ids[0])&before=\(ids[3])", token: user.token)
            #expect(window.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [ids[1], ids[2]])
            #expect(window.json["hasMore"] == false)
        }
    }

    @Test func pagesThroughMoreThanOneDiscordPageOfHiddenNotes() async throws {
        try await withServer { server in
            let user = try await server.session()
            let first = try #require(try await server.send("before the notes", token: user.token).json["id"]?.stringValue)
            let thread = try #require(try await server.thread(of: user.userId))
            for index in 0..<120 { try server.emulator.postNote(inThread: thread, content: "note \(index)") }
            let last = try #require(try await server.send("after the notes", token: user.token).json["id"]?.stringValue)
            let page = try await server.request(.get, "/v1/messages?limit=2", token: user.token)
            #expect(page.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [first, last])
            #expect(page.json["hasMore"] == false)
            let forward = try await server.request(.get, "/v1/messages?after=\(first)", token: user.token)
            #expect(forward.json["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [last])
        }
    }
}
