import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// Signed webhooks end to end, against the Discord emulator and a real HTTP receiver on loopback:
/// every delivery signed, one user's in order, retried with the same id (across a restart too),
/// a webhook its receiver answers 410 turned off, and never a note.
@Suite("Signed webhooks", .timeLimit(.minutes(4)))
struct WebhookTests {
    /// The messages' events only: the conversation's own (`conversation.created`, …) are the
    /// lifecycle's tests'.
    static func hooked(_ receiver: WebhookReceiver, _ url: URL) -> @Sendable (inout ServerConfiguration) -> Void {
        { configuration in
            configuration.webhookTargets = [WebhookTarget(url: url, secret: receiver.secret, events: [.messageCreated, .messageUpdated, .messageDeleted])]
        }
    }

    @Test func theConversationArrivesSignedInOrderAndWithoutNotes() async throws {
        try await Self.conversationArrives(store: nil)
    }

    /// The same on PostgreSQL: the deliveries claimed with FOR UPDATE SKIP LOCKED.
    @Test(.enabled(if: postgresIsAvailable)) func onPostgreSQLToo() async throws {
        try await withFreshPostgresSchema { url in try await Self.conversationArrives(store: url) }
    }

    static func conversationArrives(store: String?) async throws {
        try await WebhookReceiver.withRunning { receiver, url in
            try await withServer(gateway: true, store: store, Self.hooked(receiver, url)) { server in
                let user = try await server.session()
                _ = try await server.send("my order never came", token: user.token)
                let thread = try #require(try await server.thread(of: user.userId))
                let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Looking into it")
                try server.emulator.postNote(inThread: thread, content: "secret: refund them quietly")
                try await server.settled()
                try server.emulator.editMessage(reply.id, inChannel: thread, content: "Looking into it now")
                try await server.settled()
                try server.emulator.deleteMessage(reply.id, inChannel: thread)
                try await server.settled()
                _ = try await server.send("thanks", token: user.token)
                try await receiver.wait(for: 5)

                let got = receiver.deliveries
                #expect(got.allSatisfy { $0.verified }, "every delivery verifies against the secret")
                #expect(got.map(\.type) == ["message.created", "message.created", "message.updated", "message.deleted", "message.created"])
                #expect(got.map { $0.json["data"]?["author"]?.stringValue } == ["user", "support", "support", nil, "user"])
                #expect(got.map { $0.json["data"]?["content"]?.stringValue } == ["my order never came", "Looking into it", "Looking into it now", nil, "thanks"])
                #expect(got.allSatisfy { $0.json["data"]?["userId"]?.stringValue == user.userId && $0.json["app"]?.stringValue == "default" })
                #expect(got[3].json["data"]?["id"]?.stringValue == reply.id)
                #expect(got.allSatisfy { $0.header.event == $0.type && $0.header.delivery == $0.id })
                #expect(Set(got.map(\.id)).count == 5)
                #expect(!got.contains { String(decoding: $0.body, as: UTF8.self).contains("refund") }, "a note never leaves")
                // A tampered body fails the same check.
                #expect(!WebhookSignature.verify(got[0].signature, body: got[1].body, secret: receiver.secret, now: Date()))
                #expect(try await server.store.pendingWebhooks(of: nil).isEmpty)
                #expect(try await server.metric("threaddesk_webhook_deliveries_total") == 5)
            }
        }
    }

    /// A receiver answering 500: the delivery is sent again after its backoff (on the clock the
    /// test drives), with the same id and body; the user's next event waits behind it while another
    /// user's goes at once; after a restart on the same store, the next attempt delivers it.
    @Test func aFailedDeliveryIsSentAgainWithItsIDAcrossARestart() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        let start = Date()
        try await WebhookReceiver.withRunning { receiver, url in
            // Alice's first event fails three times.
            receiver.respond { delivery, earlier in
                delivery.json["data"]?["content"]?.stringValue == "first" && earlier < 3 ? .internalServerError : nil
            }
            let clock = ManualClock()
            let (first, userID) = try await Self.firstRun(receiver, url, storeURL: storeURL, clock: clock, start: start)
            // The server again on the same store, five minutes later: the delivery is due and goes.
            let later = ManualClock()
            try await withServer(store: storeURL, time: .driven(by: later, from: start.addingTimeInterval(300)), Self.hooked(receiver, url)) { server in
                try await server.settled()
                try await receiver.wait(for: 6)
                let got = receiver.deliveries
                #expect(got.allSatisfy { $0.verified })
                #expect(got[4].id == first.id && got[4].body == first.body, "the same delivery, byte for byte")
                #expect(got[5].json["data"]?["content"]?.stringValue == "second", "then the user's next, in order")
                #expect(got[5].json["data"]?["userId"]?.stringValue == userID)
                #expect(try await server.store.pendingWebhooks(of: nil).isEmpty)
            }
        }
    }

    private static func firstRun(
        _ receiver: WebhookReceiver, _ url: URL, storeURL: String, clock: ManualClock, start: Date
    ) async throws -> (WebhookReceiver.Received, String) {
        let result = Watched<(WebhookReceiver.Received, String)?>(nil)
        try await withServer(store: storeURL, time: .driven(by: clock, from: start), Self.hooked(receiver, url)) { server in
            let alice = try await server.session()
            _ = try await server.send("first", token: alice.token)
            try await receiver.wait(for: 1)
            let first = receiver.deliveries[0]
            // Waits its backoff: the user's next event waits behind it; another user's goes.
            _ = try await server.send("second", token: alice.token)
            let bob = try await server.session()
            _ = try await server.send("bob's", token: bob.token)
            try await receiver.wait(for: 2)
            try await server.settled()
            #expect(receiver.deliveries.count == 2)
            #expect(receiver.deliveries[1].json["data"]?["content"]?.stringValue == "bob's", "another user is not held up")
            // Its backoff passes on the driven clock: the same delivery again (500 again).
            clock.advance(by: .seconds(10))
            try await server.settled()
            try await receiver.wait(for: 3)
            // The second failure kept (its next attempt counted from the clock as it is now)
            // before the clock moves on: the receiver hears the request before the server keeps its answer.
            try await server.settled()
            clock.advance(by: .seconds(20))
            try await server.settled()
            try await receiver.wait(for: 4)
            // The receiver hears the request before the server keeps its answer (the third failure).
            try await server.settled()
            let got = receiver.deliveries
            #expect([got[2].id, got[3].id] == [first.id, first.id] && got[3].body == first.body)
            #expect(got[2].signature != first.signature, "signed anew at each attempt")
            let waiting = try await server.store.pendingWebhooks(of: nil)
            #expect(waiting.map(\.id).first == first.id && waiting.first?.attempts == 3 && waiting.count == 2)
            #expect(try await server.metric("threaddesk_webhook_failures_total") == 3)
            result.update { $0 = (first, alice.userId) }
        }
        return try #require(result.value)
    }

    /// A receiver that holds its requests holds at most its share of the turns: the app's other
    /// webhook gets every event meanwhile, and the slow one all of them once it answers.
    @Test func aSlowReceiverDelaysNothingElse() async throws {
        try await WebhookReceiver.withRunning { slow, slowURL in
            try await WebhookReceiver.withRunning(WebhookReceiver(secret: "another-webhook-secret-0123456789abcdef")) { quick, quickURL in
                slow.holding.update { $0 = true }
                try await withServer({ configuration in
                    configuration.webhooks.timeout = .seconds(120)
                    configuration.webhookTargets = [
                        WebhookTarget(url: slowURL, secret: slow.secret, events: [.messageCreated]),
                        WebhookTarget(url: quickURL, secret: quick.secret, events: [.messageCreated]),
                    ]
                }) { server in
                    let share = server.configuration.webhooks.perWebhook
                    for index in 0..<(share + 2) {
                        let user = try await server.session()
                        #expect(try await server.accept("from user \(index)", token: user.token).status == .created)
                    }
                    try await quick.wait(for: share + 2)
                    try await slow.wait(for: share)
                    #expect(slow.deliveries.count == share, "no more than its share at once")
                    slow.holding.update { $0 = false }
                    try await server.settled()
                    try await slow.wait(for: share + 2)
                    #expect(Set(slow.deliveries.map(\.id)).count == share + 2 && slow.deliveries.allSatisfy { $0.verified })
                    #expect(try await server.store.pendingWebhooks(of: nil).isEmpty)
                }
            }
        }
    }

    /// A crash report kept is `crash.reported` (for a webhook that takes it), once per report:
    /// the same payload again is no new report.
    @Test func aCrashReportKeptIsReported() async throws {
        try await WebhookReceiver.withRunning { receiver, url in
            try await withServer({ configuration in
                configuration.webhookTargets = [WebhookTarget(url: url, secret: receiver.secret, events: [.crashReported])]
            }) { server in
                let user = try await server.session()
                let payload = MachOFixture.crashPayload(uuid: MachOFixture.defaultUUID, offsets: [4096, 8192], appVersion: "4.2", build: "420")
                let first = try await CrashReportTests.upload(server, payload, token: user.token)
                #expect(first.status == .created)
                #expect(try await CrashReportTests.upload(server, payload, token: user.token).status == .ok)
                try await server.settled()
                try await receiver.wait(for: 1)
                let got = receiver.deliveries
                #expect(got.count == 1 && got.allSatisfy { $0.verified })
                #expect(got.first?.type == "crash.reported")
                let data = got.first?.json["data"]
                #expect(data?["id"]?.stringValue == first.json["reports"]?[0]?["id"]?.stringValue)
                #expect(data?["group"]?.stringValue == first.json["reports"]?[0]?["group"]?.stringValue)
                #expect(data?["userId"]?.stringValue == user.userId && data?["appVersion"]?.stringValue == "4.2" && data?["kind"]?.stringValue == "crash")
            }
        }
    }

    /// 410 Gone: the webhook is off for good (kept in the store, which the doctor reads); the
    /// app's other webhook goes on.
    @Test func aWebhookItsReceiverAnswers410IsTurnedOff() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        try await WebhookReceiver.withRunning { gone, goneURL in
            try await WebhookReceiver.withRunning(WebhookReceiver(secret: "another-webhook-secret-0123456789abcdef")) { other, otherURL in
                gone.answer(.gone)
                try await withServer(store: storeURL, { configuration in
                    configuration.storeURL = storeURL
                    configuration.webhookTargets = [
                        WebhookTarget(url: goneURL, secret: gone.secret), WebhookTarget(url: otherURL, secret: other.secret, events: [.messageCreated]),
                    ]
                }) { server in
                    let user = try await server.session()
                    _ = try await server.send("one", token: user.token)
                    _ = try await server.send("two", token: user.token)
                    try await other.wait(for: 2)
                    try await server.settled()
                    #expect(gone.deliveries.count == 1, "nothing after the 410")
                    #expect(other.deliveries.map { $0.json["data"]?["content"]?.stringValue } == ["one", "two"])
                    #expect(other.deliveries.allSatisfy { $0.verified })
                    let off = try await server.store.webhooksOff()
                    #expect(off.map(\.hook) == [WebhookTarget(url: goneURL, secret: gone.secret).key(app: .default)])
                    #expect(off.first?.host == "127.0.0.1")
                    #expect(try await server.store.pendingWebhooks(of: nil).isEmpty)
                    #expect(try await server.metric("threaddesk_webhook_given_up_total") >= 1)
                    // The doctor says so, and names the other as working.
                    let checks = await Doctor(configuration: server.configuration, logger: testLogger()).webhookChecks()
                    #expect(checks.map(\.passed) == [false, true], "\(checks.map(\.line))")
                    #expect(checks.first?.detail.contains("410 Gone") == true && checks.first?.detail.contains("127.0.0.1") == true)
                }
            }
        }
    }
}
