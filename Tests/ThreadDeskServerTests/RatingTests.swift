import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// Ratings: asked once when a conversation an agent answered is closed, given once, in the thread
/// as a note, on the user's card and in the metrics.
@Suite("Ratings", .timeLimit(.minutes(3)))
struct RatingTests {
    static func rate(_ server: Harness, token: String, _ body: String, key: String = UUID().uuidString) async throws -> Harness.Reply {
        try await server.request(.post, "/v1/rating", token: token, headers: [.init("Idempotency-Key")!: key], json: body)
    }

    static func ratingPushes(_ server: Harness, _ device: String) -> [[String: Any]] {
        server.apns.deliveries(to: device).compactMap { delivery in
            (try? JSONSerialization.jsonObject(with: delivery.payload)) as? [String: Any]
        }.filter { $0[PushPayload.ratingConversationID] != nil }
    }

    @Test func anAnsweredConversationClosedIsRatedOnceAndTheScoreReachesTheThread() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            try await server.settled()
            let (user, thread, device) = try await server.userWithThread()
            // Nothing waits before a close.
            let early = try await Self.rate(server, token: user.token, #"{"score":5}"#)
            #expect(early.status == .conflict && early.errorCode == "rating_not_requested")
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Fixed in the next build")
            try await server.settled()
            let stream = try await EventStreamClient.open(port: try #require(server.client.port), token: user.token)
            defer { stream.close() }
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()

            // Asked: on the stream, in the page, by a push that names the conversation.
            let event = try await stream.next("rating.requested") { $0.name == "rating.requested" }
            let conversation = try #require(event.json["conversationId"] as? String)
            let page = try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self)
            #expect(page.ratingRequest?.conversationId == conversation)
            let pushes = Self.ratingPushes(server, device)
            #expect(pushes.count == 1 && pushes.first?[PushPayload.ratingConversationID] as? String == conversation)
            #expect(pushes.first?["messageId"] == nil)
            // A stream that opens now hears of it too.
            let later = try await EventStreamClient.open(port: try #require(server.client.port), token: user.token)
            defer { later.close() }
            _ = try await later.next("rating.requested on opening") { $0.name == "rating.requested" }

            // Rated: 201, the note in the thread (the comment escaped), the request gone.
            let key = UUID().uuidString
            let rated = try await Self.rate(server, token: user.token, #"{"score":4,"comment":"Fast *and* kind @everyone"}"#, key: key)
            #expect(rated.status == .created)
            let rating = try rated.decode(RatingResponse.self).rating
            #expect(rating.conversationId == conversation && rating.score == 4 && rating.comment == "Fast *and* kind @everyone")
            try await server.settled()
            let note = try #require(server.emulator.messages(inThread: thread).first { $0.content.contains("4/5") })
            #expect(note.content == #":ninja: ★★★★☆ 4/5 — Fast \*and\* kind \@everyone"# && !note.mentionEveryone, "\(note.content)")
            #expect(try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self).ratingRequest == nil)
            #expect(try await server.messages(token: user.token).allSatisfy { $0["content"]?.stringValue?.contains("4/5") != true }, "a note")

            // The same request again answers the first; another is refused; the key with another body too.
            let retried = try await Self.rate(server, token: user.token, #"{"score":4,"comment":"Fast *and* kind @everyone"}"#, key: key)
            let retriedRating = try retried.decode(RatingResponse.self).rating
            #expect(retried.status == .ok && retriedRating == rating)
            let second = try await Self.rate(server, token: user.token, #"{"score":1}"#)
            #expect(second.status == .conflict && second.errorCode == "already_rated")
            let reused = try await Self.rate(server, token: user.token, #"{"score":2}"#, key: key)
            #expect(reused.status == .unprocessableContent && reused.errorCode == "idempotency_key_reused")
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).filter { $0.content.contains("/5") }.count == 1, "one note")

            // The card and the metrics.
            let card = try await DeskTests.run(server, "user", in: thread)
            #expect(card.content?.contains("★★★★☆ 4/5") == true)
            let metrics = try await server.metricsText()
            #expect(metrics.contains(#"threaddesk_ratings_total{score="4",app="default"} 1"#))
            #expect(metrics.contains(#"threaddesk_conversations_closed_total{by="agent",app="default"} 1"#))

            // A next conversation, closed and rated: the first request's key still answers the first rating.
            #expect(try await server.send("another thing", token: user.token).status == .created)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Done too")
            try await server.settled()
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            #expect(try await Self.rate(server, token: user.token, #"{"score":2}"#).status == .created)
            let replayed = try await Self.rate(server, token: user.token, #"{"score":4,"comment":"Fast *and* kind @everyone"}"#, key: key)
            let replayedRating = try replayed.decode(RatingResponse.self).rating
            #expect(replayed.status == .ok && replayedRating == rating)
        }
    }

    @Test func aConversationNoAgentAnsweredAsksNothing() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            try await server.settled()
            let (user, thread, device) = try await server.userWithThread()
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            #expect(Self.ratingPushes(server, device).isEmpty)
            #expect(try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self).ratingRequest == nil)
            let refused = try await Self.rate(server, token: user.token, #"{"score":5}"#)
            #expect(refused.status == .conflict && refused.errorCode == "rating_not_requested")
            // Answered, closed, reopened: the request is withdrawn.
            #expect(try await server.send("still broken", token: user.token).status == .created)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Looking")
            try await server.settled()
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            #expect(try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self).ratingRequest != nil)
            try await DeskTests.run(server, "reopen", in: thread)
            try await server.settled()
            #expect(try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self).ratingRequest == nil)
            #expect(try await Self.rate(server, token: user.token, #"{"score":5}"#).errorCode == "rating_not_requested")
        }
    }

    @Test func theNoteFitsDiscordWhateverTheCommentHolds() throws {
        for comment in [String(repeating: "🇫🇷", count: 500), String(repeating: "*", count: 500), String(repeating: "👩‍👩‍👧‍👦", count: 500)] {
            try RatingRoutes.validate(RatingSubmission(score: 3, comment: comment))
            let note = RatingService.note(score: 3, comment: comment)
            #expect(note.utf16.count <= MessageText.discordLimit && note.hasPrefix(":ninja: ★★★☆☆ 3/5 — "))
        }
        #expect(RatingService.note(score: 1, comment: nil) == ":ninja: ★☆☆☆☆ 1/5")
        // One character of 41 scalars: refused.
        #expect(throws: APIError.self) { try RatingRoutes.validate(RatingSubmission(score: 3, comment: "e" + String(repeating: "\u{301}", count: 40))) }
    }

    @Test func badRatingsAreRefusedNamingTheFieldAndReachNothing() async throws {
        try await withServer(gateway: true, DeskTests.deskOn) { server in
            try await server.settled()
            let (user, thread, _) = try await server.userWithThread()
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Done")
            try await server.settled()
            try await DeskTests.run(server, "close", in: thread)
            try await server.settled()
            let posts = server.emulator.messages(inThread: thread).count
            let long = String(repeating: "é", count: 501)
            for body in [
                #"{"score":0}"#, #"{"score":6}"#, #"{"score":4.5}"#, #"{"score":"4"}"#, #"{}"#, #"{"score":3,"comment":"\#(long)"}"#,
                #"{"score":3,"comment":"a\u0007b"}"#, #"{"score":3,"comment":7}"#, "[]", "not json",
            ] {
                let reply = try await Self.rate(server, token: user.token, body)
                #expect(reply.status == .badRequest, "\(body)")
                #expect(["invalid_rating", "invalid_body", "invalid_json"].contains(reply.errorCode ?? ""), "\(body): \(reply.errorCode ?? "")")
            }
            let noToken = try await server.request(.post, "/v1/rating", json: #"{"score":5}"#)
            #expect(noToken.status == .unauthorized)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == posts, "nothing reached Discord")
            // The request still waits, and a good rating goes through.
            #expect(try await Self.rate(server, token: user.token, #"{"score":5,"comment":"  "}"#).status == .created)
        }
    }
}
