import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// The conversation's own webhook events, in the user's order with the messages': created before
/// the first message, closed, rated, reopened.
@Suite("The conversation's webhook events", .timeLimit(.minutes(3)))
struct ConversationWebhookTests {
    @Test func aConversationsCourseArrivesInOrder() async throws {
        try await WebhookReceiver.withRunning { receiver, url in
            try await withServer(gateway: true) { configuration in
                DeskTests.deskOn(&configuration)
                configuration.webhookTargets = [WebhookTarget(url: url, secret: receiver.secret, events: Set(WebhookEventType.allCases))]
            } _: { server in
                try await server.settled()
                let (user, thread, _) = try await server.userWithThread(first: "the export fails")
                _ = try server.emulator.replyAsAgent(inThread: thread, content: "Fixed, try again")
                try await server.settled()
                try await DeskTests.run(server, "close", in: thread)
                try await server.settled()
                #expect(try await RatingTests.rate(server, token: user.token, #"{"score":4,"comment":"ok"}"#).status == .created)
                try await server.settled()
                try await DeskTests.run(server, "reopen", in: thread)
                try await receiver.wait(for: 6)
                let got = receiver.deliveries
                #expect(got.allSatisfy { $0.verified })
                #expect(got.map(\.type) == [
                    "conversation.created", "message.created", "message.created", "conversation.closed", "rating.submitted", "conversation.reopened",
                ])
                let conversation = try #require(got.first?.json["data"]?["conversationId"]?.stringValue)
                for event in got where event.type.hasPrefix("conversation.") || event.type == "rating.submitted" {
                    #expect(event.json["data"]?["conversationId"]?.stringValue == conversation && event.json["data"]?["userId"]?.stringValue == user.userId)
                }
                #expect(got[3].json["data"]?["closedBy"]?.stringValue == "agent")
                #expect(got[4].json["data"]?["rating"]?["score"]?.intValue == 4 && got[4].json["data"]?["rating"]?["comment"]?.stringValue == "ok")
                #expect(!got.contains { String(decoding: $0.body, as: UTF8.self).contains("4/5") }, "the rating's note never leaves")
            }
        }
    }
}
