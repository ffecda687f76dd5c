import DiscordEmulator
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// The SDK against a real ThreadDesk and the Discord emulator on loopback.
@Suite("ThreadDeskKit against the server", .timeLimit(.minutes(2)))
struct SDKTests {
    @Test func openSendReadAndReceiveAReplyLive() async throws {
        try await withSDKServer { server in
            let client = server.client()
            let session = try await client.open(installation: ["appVersion": "2.1", "osPlatform": "iOS"])
            // The kept session is reused by the next launch instead of making a new user.
            #expect(try await server.client().open() == session)

            let sent = try await client.send("Hello from the SDK")
            #expect(sent.author == .user && sent.content == "Hello from the SDK")
            let thread = try await server.thread(of: client)

            let recorder = EventRecorder()
            await recorder.start(client.events())
            defer { Task { await recorder.stop() } }
            try await recorder.next("the first unread count") { $0 == .unread(count: 0) }
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Hi, how can we help?")
            let created = try await recorder.next("the reply") {
                if case .messageCreated(let message) = $0 { message.id == reply.id } else { false }
            }
            guard case .messageCreated(let message) = created else { return }
            #expect(message.author == .support && message.content == "Hi, how can we help?")
            try await recorder.next("one unread") { $0 == .unread(count: 1) }
            #expect(try await client.unreadCount() == 1)

            let page = try await client.messages()
            #expect(page.messages.map(\.content) == ["Hello from the SDK", "Hi, how can we help?"])
            let older = try await client.messages(before: reply.id, limit: 1)
            #expect(older.messages.map(\.id) == [sent.id])
            // No support hours configured: support is in.
            #expect(try await client.supportStatus() == SupportStatus(status: .open))
        }
    }

    /// A message's life as the app sees it: kept by the server at once (`queued`), then `sent` as
    /// a `messageUpdated` event; one Discord refuses is `failed` with Discord's reason, and is sent
    /// again by `retry` or withdrawn by `delete` (support never sees it).
    @Test func aMessagesDeliveryIsSeenQueuedSentFailedRetriedAndDeleted() async throws {
        try await withSDKServer { server in
            let client = server.client()
            try await client.open()
            _ = try await client.send("first")
            let thread = try await server.thread(of: client)
            let recorder = EventRecorder()
            await recorder.start(client.events())
            defer { Task { await recorder.stop() } }
            try await recorder.next("the stream's first unread count") { $0 == .unread(count: 0) }

            let second = try await client.send("second")
            #expect(second.delivery == .queued)
            try await recorder.next("the second, sent") {
                if case .messageUpdated(let message) = $0 { message.id == second.id && message.delivery == .sent } else { false }
            }

            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 2, status: 400)
            let refused = try await client.send("refused")
            let dropped = try await client.send("refused too")
            try await server.settled()
            let failed = try await client.messages().messages.filter { $0.delivery == .failed }
            #expect(failed.map(\.id) == [refused.id, dropped.id])
            #expect(failed.first?.deliveryError?.code == "50035")

            let retried = try await client.retry(try requireValue(failed.first, "no failed message"))
            #expect(retried.id == refused.id && retried.delivery == .queued)
            try await client.delete(dropped.id)
            try await server.settled()
            let page = try await client.messages().messages
            #expect(page.map(\.content) == ["first", "second", "refused"])
            #expect(page.allSatisfy { $0.delivery == .sent })
            #expect(server.emulator.messages(inThread: thread).map(\.content).suffix(3) == ["first", "second", "refused"])
        }
    }

    @Test func suggestionsWhileTheUserTypes() async throws {
        try await withSDKServer(faq: true) { server in
            let client = server.client()
            try await client.open()
            #expect(try await client.suggestions(for: "  ").isEmpty)
            let post = try server.emulator.postFAQ(title: "I can't connect my TV", answer: "Add it by hand: Settings › Devices.")
            try await server.settled()
            try #require(try await !client.suggestions(for: "cant conect tv").isEmpty, "the answer suggested")
            #expect(try await client.suggestions(for: "cant conect tv") == [Suggestion(id: post, title: "I can't connect my TV", answer: "Add it by hand: Settings › Devices.")])
            // Whatever the user types, however long, goes as one query parameter.
            #expect(try await client.suggestions(for: "tv+remote & c'est ça? " + String(repeating: "x", count: 300)).map(\.id) == [post])
            // Sent right after it was shown: support gets a note naming it.
            _ = try await client.send("It still does not connect", suggestionID: post)
            let thread = try await server.thread(of: client)
            #expect(server.emulator.messages(inThread: thread).last?.content.contains("<#\(post)>") == true)
        }
    }

    /// Posts of messages the emulator answered (it logs a request as it answers it).
    static func messagePostsAnswered(_ server: SDKHarness) -> Int {
        server.emulator.recordedRequests.filter { $0.method == "POST" && $0.route == "/channels/{channel_id}/messages" }.count
    }

    @Test func aSendThatCannotBeConfirmedWaitsInTheOutboxAndTheNextLaunchPostsItOnce() async throws {
        try await withSDKServer { server in
            let setup = server.client(device: "tablet")
            try await setup.open()
            _ = try await setup.send("making the thread")
            let thread = try await server.thread(of: setup)
            let first = server.client(device: "tablet") { $0.requestTimeout = 0.3; $0.sendAttempts = 1 }

            // The server cannot answer in time: the user's lock is held (as a slow request of theirs
            // would hold it) until the client has given up on its send.
            let user = try requireValue(await setup.userID.flatMap { UserID($0) }, "no session")
            let locked = Watched(false)
            let (release, releaser) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await server.store.withUser(user, idempotencyKey: nil, work: .waitsOnOthers) { _ in
                    locked.update { $0 = true }
                    for await _ in release { break }
                }
            }
            try await locked.wait(for: "the user's lock held") { $0 }
            let pendingKey: String
            do {
                _ = try await first.send("sent while the network was bad")
                releaser.finish()
                Issue.record("the send should not have been confirmed")
                return
            } catch let error as ThreadDeskError where error.kind == .pending {
                pendingKey = try #require(error.idempotencyKey)
            }
            releaser.finish()
            try await holder.value
            #expect(try await first.pendingMessages().map(\.id) == [pendingKey])
            // Whether the abandoned attempt was accepted once the lock came or not, the retry must
            // not post it twice.
            try await server.settled()

            // The app is launched again: same stores, a new client.
            let relaunched = server.client(device: "tablet")
            try await relaunched.open()
            let flushed = try await relaunched.flushOutbox()
            #expect(flushed.map(\.content) == ["sent while the network was bad"])
            #expect(try await relaunched.pendingMessages().isEmpty)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).filter { $0.content == "sent while the network was bad" }.count == 1)
        }
    }

    @Test func theStreamResumesAfterTheServerEndsItWithoutLosingOrRepeatingReplies() async throws {
        try await withSDKServer({ $0.live.maxStreamDuration = .seconds(1) }) { server in
            let client = server.client()
            try await client.open()
            _ = try await client.send("hello")
            let thread = try await server.thread(of: client)
            let recorder = EventRecorder()
            await recorder.start(client.events())
            defer { Task { await recorder.stop() } }
            try await recorder.next("connected") { $0 == .connection(.live) }

            // Replies keep coming while the server ends each stream after about a second, until
            // the client has had to reconnect at least twice (however slow the machine).
            func reconnections() async -> Int {
                await recorder.events.filter { if case .connection(.reconnecting) = $0 { true } else { false } }.count
            }
            // Each reply waits for the one before to reach the client (or its stream to end first).
            var replies: [String] = []
            let deadline = ContinuousClock.now + .seconds(120)
            while true {
                let seen = await reconnections()
                guard replies.count < 6 || (seen < 2 && ContinuousClock.now < deadline) else { break }
                let sent = replies.count
                replies.append(try server.emulator.replyAsAgent(inThread: thread, content: "reply \(sent + 1)").id)
                try await recorder.wait(for: "reply \(sent + 1), or the stream ended") { events in
                    events.filter { if case .messageCreated(let message) = $0 { message.author == .support } else { false } }.count > sent
                        || events.filter { if case .connection(.reconnecting) = $0 { true } else { false } }.count > seen
                }
            }
            #expect(await reconnections() >= 2, "the server ended the stream at least twice")
            let expected = replies.count
            try await recorder.wait(for: "all \(expected) replies") { events in
                events.filter { if case .messageCreated(let message) = $0 { message.author == .support } else { false } }.count >= expected
            }
            let received = await recorder.createdMessages.filter { $0.author == .support }.map(\.id)
            #expect(received == replies)
        }
    }

    @Test func whenTheStreamIsRefusedNewMessagesArePolledFor() async throws {
        // One stream in all: a second device's stream is refused (503), so it polls.
        try await withSDKServer({ $0.live.maxStreams = 1 }) { server in
            let phone = server.client()
            try await phone.open()
            _ = try await phone.send("hello")
            let thread = try await server.thread(of: phone)
            let holder = EventRecorder()
            await holder.start(phone.events())
            defer { Task { await holder.stop() } }
            try await holder.next("the one stream") { $0 == .connection(.live) }

            let watch = server.client(device: "watch") {
                $0.streamFailuresBeforePolling = 2
                $0.pollInterval = 0.2
                $0.streamRetryInterval = 30
            }
            // The same user on a second device: it presents the first device's session.
            try await FileSessionStore(url: server.folder.appendingPathComponent("watch/session.json"))
                .save(try await FileSessionStore(url: server.folder.appendingPathComponent("phone/session.json")).load())
            try await watch.open()
            let recorder = EventRecorder()
            await recorder.start(watch.events())
            defer { Task { await recorder.stop() } }
            try await recorder.next("polling") { $0 == .connection(.polling) }
            try await recorder.next("the baseline unread count") { $0 == .unread(count: 0) }
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "found by polling")
            try await recorder.next("the polled reply") {
                if case .messageCreated(let message) = $0 { message.id == reply.id } else { false }
            }
            try await recorder.next("the polled unread count") { $0 == .unread(count: 1) }
            #expect(await recorder.createdMessages.map(\.content) == ["found by polling"])
        }
    }

    @Test func typingAndReadReachDiscordAndErrorsAreTyped() async throws {
        try await withSDKServer { server in
            let client = server.client()
            try await client.open()
            _ = try await client.send("hello")
            let thread = try await server.thread(of: client)
            for _ in 0..<5 { await client.typing() }
            try await server.settled()
            try #require(server.emulator.threads().first { $0.id == thread }?.botTypingAt != nil, "typing in Discord")
            #expect(server.emulator.counters.requestsByRoute["POST /channels/{channel_id}/typing"] == 1)

            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "read me")
            try await server.settled()
            try #require(try await client.unreadCount() == 1, "the reply mirrored")
            let state = try await client.markRead(reply.id)
            #expect(state == ReadState(lastReadMessageId: reply.id, count: 0))
            try await server.settled()
            try #require(server.emulator.messages(inThread: thread).first { $0.id == reply.id }?.reactions == ["👀"], "the read receipt in Discord")

            do {
                _ = try await client.markRead("12345")
                Issue.record("marking a stranger's message should fail")
            } catch let error as ThreadDeskError {
                #expect(error.code == .messageNotFound)
            }
            do {
                _ = try await client.send(String(repeating: "x", count: 5000))
                Issue.record("a too long message should be refused")
            } catch let error as ThreadDeskError {
                #expect(error.code == .messageTooLong)
                #expect(!error.isRetryable)
            }
            // Refused for good: it does not wait in the outbox.
            #expect(try await client.pendingMessages().isEmpty)
        }
    }

    @Test func filesDiagnosticsInstallationAndPushTokens() async throws {
        try await withSDKServer { server in
            let client = server.client()
            try await client.open()
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 0, count: 64)
            let sent = try await client.send("a screenshot", files: [OutgoingFile(filename: "shot.png", contentType: "image/png", data: png)])
            let attachment = try requireValue(sent.attachments.first, "no attachment")
            #expect(attachment.filename == "shot.png" && attachment.url.hasPrefix("/v1/attachments/"))
            #expect(try await client.attachmentData(attachment) == png)

            struct Diagnostics: Encodable, Sendable {
                var battery: Double
                var lastError: String
            }
            let result = try await client.uploadDiagnostics(Diagnostics(battery: 0.42, lastError: "timeout"))
            // Accepted into the outbox (the id is ThreadDesk's); in the thread as a file once delivered.
            let thread = try await server.thread(of: client)
            #expect(result.filename.hasPrefix("diagnostics-") && !result.messageId.isEmpty)
            #expect(server.emulator.messages(inThread: thread).contains { $0.attachmentNames == [result.filename] })

            #expect(try await client.updateInstallation(["appVersion": "3.0"]).changed)
            #expect(try await client.updateInstallation(["appVersion": "3.0"]).changed == false)

            let token = Data((0..<32).map { UInt8($0) })
            try await client.registerPushToken(token, environment: .development)
            let user = try requireValue(await client.userID.flatMap { UserID($0) }, "no user")
            #expect(try await server.store.user(user)?.pushToken == token.map { String(format: "%02x", $0) }.joined())
            try await client.unregisterPushToken()
            #expect(try await server.store.user(user)?.pushToken == nil)

            // A push's payload leads to its message.
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "pushed")
            try await server.settled()
            try #require(try await client.unreadCount() == 1, "the reply mirrored")
            let pushed = try await client.message(forPush: ["aps": ["alert": "x"], PushPayload.messageID: reply.id])
            #expect(pushed?.content == "pushed")
        }
    }

    @Test func twoDevicesOfOneUserKeepTheirSessionsAndRenewingNeverLocksOut() async throws {
        let secret = "sdk-identity-secret"
        try await withSDKServer({ $0.identitySecret = secret }) { server in
            let proof: @Sendable (String) async throws -> String = { IdentityVerifier(secret: secret).userHash(for: UserID($0)!) }
            let phone = server.client(device: "phone", userID: "account-17") { $0.userHash = proof }
            let tablet = server.client(device: "tablet", userID: "account-17") { $0.userHash = proof }
            let first = try await phone.open()
            _ = try await phone.send("from the phone")
            let second = try await tablet.open()
            #expect(first.userId == second.userId && first.token != second.token)
            // Neither device logs the other out: both read the same conversation.
            #expect(try await phone.messages().messages.map(\.content) == ["from the phone"])
            #expect(try await tablet.messages().messages.map(\.content) == ["from the phone"])

            let renewed = try await phone.renewSession()
            #expect(renewed.token != first.token)
            #expect(try await phone.unreadCount() == 0)
            #expect(try await tablet.unreadCount() == 0)
            // The replaced token was ended on the server.
            let stale = server.client(device: "stale")
            try await FileSessionStore(url: server.folder.appendingPathComponent("stale/session.json")).save(first)
            do {
                _ = try await stale.unreadCount()
                Issue.record("the replaced token should be refused")
            } catch let error as ThreadDeskError {
                #expect(error.code == .unauthorized)
            }

            try await tablet.signOut()
            #expect(try await phone.unreadCount() == 0)
            do {
                _ = try await tablet.unreadCount()
                Issue.record("a signed-out device has no session")
            } catch let error as ThreadDeskError {
                guard error.kind == .noSession else { Issue.record("\(error)"); return }
            }
        }
    }

    /// `POST /v1/messages` requests the server has answered, whatever the answer (its metrics).
    static func sendsAnswered(_ server: SDKHarness) async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: server.serverURL.appendingPathComponent("metrics"))
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("threaddesk_http_requests_total{") && $0.contains(#"route="/v1/messages""#) && $0.contains(#"method="POST""#) }
            .compactMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) }
            .reduce(0, +)
    }
}
