import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Legacy routes of the reference iOS client")
struct LegacyRoutesTests {
    static let key: HTTPFields = [.init("x-api-key")!: "legacy-key"]

    @Test func offUnlessALegacyKeyIsConfigured() async throws {
        try await withServer { server in
            let reply = try await server.request(.get, "/messages/abc-def-ghi", headers: Self.key)
            #expect(reply.status == .notFound)
            #expect(reply.errorCode == "not_found")
        }
    }

    @Test func neitherKeyTakesOverTheOtherSidesUsers() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            // A legacy user with a conversation: the app key alone gets no session for them.
            let legacy = #"{"content":"from the old app","userId":"k7q-2mz-9xa"}"#
            #expect(try await server.request(.post, "/new-message", headers: Self.key, json: legacy).status == .ok)
            let takeover = try await server.request(
                .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: #"{"userId":"k7q-2mz-9xa"}"#)
            #expect(takeover.status == .conflict)
            #expect(takeover.errorCode == "user_claimed")

            // A /v1 user whose id has the legacy shape: the legacy key can neither read nor write for them.
            let user = try await server.session(#"{"userId":"v1u-ser-abc"}"#)
            #expect(try await server.send("mine", token: user.token).status == .created)
            let read = try await server.request(.get, "/messages/v1u-ser-abc", headers: Self.key)
            #expect(read.status == .forbidden)
            #expect(read.errorCode == "not_a_legacy_user")
            let write = try await server.request(
                .post, "/new-message", headers: Self.key, json: #"{"content":"as them","userId":"v1u-ser-abc"}"#)
            #expect(write.status == .forbidden)
            let upload = try await server.request(.post, "/upload-diagnostics/v1u-ser-abc-x", headers: Self.key, json: "{}")
            #expect(upload.status == .forbidden)
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["mine"])
        }
    }

    @Test func theReferenceClientsRequestsWork() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let apns = String(repeating: "0f", count: 32)
            // The reference client's exact body.
            let body = #"""
                {"content":"Hello from the old app","title":"Support","apnsToken":"\#(apns)","userId":"a1b-2c3-d4e",
                 "installationInfo":{"userId":"a1b-2c3-d4e","buildVersion":"88","osPlatform":"iOS","osVersion":"16.4"}}
                """#
            let sent = try await server.request(.post, "/new-message", headers: Self.key, json: body)
            #expect(sent.status == .ok)
            try await server.settled()  // the outbox delivers it
            let record = try #require(try await server.store.user(UserID("a1b-2c3-d4e")!))
            #expect(record.pushToken == apns)
            #expect(record.tokenHash == nil)
            let thread = try #require(record.threadID)
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Hi from support")
            try server.emulator.postNote(inThread: thread, content: "not for the user")

            let list = try await server.request(.get, "/messages/a1b-2c3-d4e", headers: Self.key)
            #expect(list.status == .ok)
            let messages = try #require(list.json.arrayValue)
            #expect(messages.map { $0["content"]?.stringValue } == ["Hi from support", "Hello from the old app"])
            #expect(messages[1]["author"]?["id"]?.stringValue == server.discord.botUserID)
            #expect(messages[0]["author"]?["id"]?.stringValue == server.discord.agentUserID)
            #expect(messages[0]["type"] == 0)
            #expect(messages[0]["timestamp"]?.stringValue != nil)
            #expect(messages[0]["attachments"] == [])

            let after = try await server.request(.get, "/messages/a1b-2c3-d4e?after=\(messages[1]["id"]!.stringValue!)", headers: Self.key)
            #expect(after.json.arrayValue?.map { $0["id"]?.stringValue } == [reply.id])

            let upload = try await server.request(
                .post, "/upload-diagnostics/a1b-2c3-d4e-1700000000", headers: Self.key, json: #"{"logs":["x"],"osVersion":"16.4"}"#)
            #expect(upload.status == .ok)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).contains { $0.attachmentNames.first?.hasPrefix("diagnostics-") == true })
            #expect(server.emulator.threads().count == 1)
        }
    }

    /// The reference client sends, then lists at once: what it sent is there, Discord down or
    /// not, under the id the send answered, newest first, the bot its author (as Discord will
    /// have it), before the user's thread exists and after.
    @Test func whatTheClientSentIsListedBeforeDiscordHasIt() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.legacyAPIKey = "legacy-key"; $0.discordBudget = .seconds(1) }) { server in
            func send(_ text: String) async throws -> String {
                let sent = try await server.request(.post, "/new-message", headers: Self.key, json: #"{"content":"\#(text)","userId":"q1w-2e3-r4t"}"#)
                #expect(sent.status == .ok)
                return try #require(sent.json["messageId"]?.stringValue)
            }
            func list() async throws -> [JSON] {
                let listed = try await server.request(.get, "/messages/q1w-2e3-r4t", headers: Self.key)
                #expect(listed.status == .ok)
                return listed.json.arrayValue ?? []
            }
            // No thread yet, and Discord makes none for now.
            server.emulator.failRequests("POST", "/channels/{channel_id}/threads", count: 1000, status: 503)
            let one = try await send("one")
            var listed = try await list()
            #expect(listed.map { $0["id"]?.stringValue } == [one])
            #expect(listed.first?["content"] == "one" && listed.first?["author"]?["id"]?.stringValue == server.discord.botUserID)
            #expect(listed.first?["author"]?["username"]?.stringValue?.isEmpty == false)

            // The attempts under way end (each waits its backoff), then Discord is back.
            try await server.settled(driving: clock)
            server.emulator.failRequests("POST", "/channels/{channel_id}/threads", count: 0)
            clock.advance(by: .seconds(61))
            // An attempt that a busy machine let time out waits its backoff (up to a minute): passed too.
            try await server.settled(driving: clock, step: .seconds(61))
            let thread = try #require(try await server.thread(of: "q1w-2e3-r4t"))
            // A thread, and Discord takes no post now.
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1000, status: 503)
            let two = try await send("two")
            let three = try await send("three")
            listed = try await list()
            #expect(listed.map { $0["id"]?.stringValue } == [three, two, one])
            #expect(listed.map { $0["author"]?["id"]?.stringValue } == Array(repeating: server.discord.botUserID, count: 3))

            try await server.settled(driving: clock)
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 0)
            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock, step: .seconds(61))
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["one", "two", "three"])
            listed = try await list()
            #expect(listed.map { $0["id"]?.stringValue } == [three, two, one])
            #expect(listed.map { $0["author"]?["id"]?.stringValue } == Array(repeating: server.discord.botUserID, count: 3))
        }
    }

    /// A user of the reference system whose thread the bot made before ThreadDesk ran: their
    /// first message continues that thread (found among the active threads by its name).
    @Test func aThreadTheReferenceSystemMadeIsContinued() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let earlier = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID,
                DiscordForumThreadCreate(name: "k7q-2mz-9xa", message: DiscordMessageCreate(content: "Hello from before the move")))
            let body = #"{"content":"Hello after the move","userId":"k7q-2mz-9xa"}"#
            #expect(try await server.request(.post, "/new-message", headers: Self.key, json: body).status == .ok)
            try await server.settled()
            #expect(try await server.thread(of: "k7q-2mz-9xa") == earlier.channel.id)
            #expect(server.emulator.threads().count == 1)
            #expect(server.emulator.messages(inThread: earlier.channel.id).map(\.content) == ["Hello from before the move", "Hello after the move"])
            #expect(try await server.store.globalValue(ThreadNotes.unrecordedThreadKey(UserID("k7q-2mz-9xa")!)) == nil)
        }
    }

    @Test func legacyInputIsChecked() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let nope: HTTPFields = [.init("x-api-key")!: "nope"]
            let cases: [(HTTPRequest.Method, String, HTTPFields, String?, HTTPResponse.Status)] = [
                (.get, "/messages/a1b-2c3-d4e", [:], nil, .unauthorized),
                (.get, "/messages/a1b-2c3-d4e", nope, nil, .unauthorized),
                (.get, "/messages/not-legacy", Self.key, nil, .badRequest),
                (.get, "/messages/a1b-2c3-d4e?after=xyz", Self.key, nil, .badRequest),
                (.post, "/new-message", Self.key, #"{"content":"x"}"#, .badRequest),
                (.post, "/new-message", Self.key, #"{"content":" ","userId":"a1b-2c3-d4e"}"#, .badRequest),
                (.post, "/new-message", Self.key, #"{"content":"x","userId":"a1b-2c3-d4e","apnsToken":"zz"}"#, .badRequest),
                (.post, "/upload-diagnostics/short", Self.key, "{}", .badRequest),
                (.post, "/upload-diagnostics/a1b-2c3-d4e", Self.key, "[]", .badRequest),
            ]
            for (method, path, headers, body, status) in cases {
                let reply = try await server.request(method, path, headers: headers, json: body)
                #expect(reply.status == status, "\(method) \(path)")
                #expect(reply.errorCode != nil)
            }
            let empty = try await server.request(.get, "/messages/a1b-2c3-d4e", headers: Self.key)
            #expect(empty.json == .array([]))
            #expect(server.emulator.recordedRequests.isEmpty)
        }
    }
}
