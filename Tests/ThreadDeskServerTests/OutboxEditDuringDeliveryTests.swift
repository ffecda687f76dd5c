import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// The first waiting message of a user could not be edited or deleted while Discord was slow or
/// down: every `PATCH` and `DELETE` answered 409 `retry_in_progress` for as long as its delivery's
/// attempt went on. A change is accepted at once now, and the delivery applies it when the attempt
/// ends: not posted, the new text goes (or nothing); posted, the post is edited or deleted.
@Suite("Changing a message while it is being delivered", .timeLimit(.minutes(3)))
struct OutboxEditDuringDeliveryTests {
    static let route = "/channels/{channel_id}/messages"

    /// Sends `text` with Discord's answer to its post held (and, with `refusal`, that answer a
    /// refusal for good); returns once the post is in flight.
    static func sendHeld(_ server: Harness, token: String, _ text: String, refusal: Bool = false) async throws -> String {
        let before = server.emulator.counters.requestsByRoute["POST \(route)", default: 0]
        if refusal { server.emulator.failRequests("POST", route, count: 1, status: 400) }
        server.emulator.holdRequests("POST", route)
        let sent = try await server.request(
            .post, "/v1/messages", token: token, headers: [.init("Idempotency-Key")!: UUID().uuidString], json: #"{"content":"\#(text)"}"#)
        #expect(sent.status == .created)
        try await server.emulator.waitUntil("the message's post") { $0.counters.requestsByRoute["POST \(route)", default: 0] > before }
        return try #require(sent.json["id"]?.stringValue)
    }

    static func listed(_ server: Harness, _ token: String) async throws -> [(id: String, content: String, delivery: String)] {
        let page = try await server.request(.get, "/v1/messages", token: token)
        return (page.json["messages"]?.arrayValue ?? []).map {
            ($0["id"]?.stringValue ?? "", $0["content"]?.stringValue ?? "", $0["delivery"]?.stringValue ?? "")
        }
    }

    @Test func anEditWhileThePostIsUnderWayIsTakenAtOnceAndTheReplyIsEdited() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread(first: "first")
            let id = try await Self.sendHeld(server, token: user.token, "helo wrold")
            let edited = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"hello world"}"#)
            #expect(edited.status == .ok)
            #expect(edited.json["content"]?.stringValue == "hello world")
            #expect(edited.json["delivery"]?.stringValue == "queued", "the delivery's state is what it was")
            #expect(try await Self.listed(server, user.token).last?.content == "hello world", "the new text shown at once")

            server.emulator.releaseHeldRequests()
            try await server.settled()
            let posted = server.emulator.messages(inThread: thread).filter { $0.content.hasPrefix("hel") }
            #expect(posted.map(\.content) == ["hello world"])
            let last = try #require(try await Self.listed(server, user.token).last)
            #expect(last.id == id && last.content == "hello world" && last.delivery == "sent")
        }
    }

    @Test func aDeleteWhileThePostIsUnderWayIsTakenAtOnceAndThePostGoes() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread(first: "first")
            let id = try await Self.sendHeld(server, token: user.token, "sent by mistake")
            let deleted = try await server.request(.delete, "/v1/messages/\(id)", token: user.token)
            #expect(deleted.status == .noContent)
            #expect(try await Self.listed(server, user.token).map(\.content) == ["first"])

            server.emulator.releaseHeldRequests()
            try await server.settled()
            #expect(!server.emulator.messages(inThread: thread).contains { $0.content == "sent by mistake" })
            #expect(try await Self.listed(server, user.token).map(\.content) == ["first"])
        }
    }

    /// Not posted (Discord refused the attempt): the new text goes in an attempt of its own, and a
    /// message deleted meanwhile goes nowhere.
    @Test func anAttemptDiscordRefusedLeavesTheChangeToGo() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread(first: "first")
            let id = try await Self.sendHeld(server, token: user.token, "old words", refusal: true)
            let edited = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"new words"}"#)
            #expect(edited.status == .ok)
            server.emulator.releaseHeldRequests()
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).map(\.content).filter { $0.hasSuffix("words") } == ["new words"])
            let last = try #require(try await Self.listed(server, user.token).last)
            #expect(last.id == id && last.content == "new words" && last.delivery == "sent")

            let doomed = try await Self.sendHeld(server, token: user.token, "never mind", refusal: true)
            #expect(try await server.request(.delete, "/v1/messages/\(doomed)", token: user.token).status == .noContent)
            server.emulator.releaseHeldRequests()
            try await server.settled()
            #expect(!server.emulator.messages(inThread: thread).contains { $0.content == "never mind" })
            #expect(try await Self.listed(server, user.token).map(\.content) == ["first", "new words"])
            #expect(try await server.store.outboxItem(try #require(Snowflake(doomed))) == nil, "the refused message the user deleted left the outbox")
        }
    }
}
