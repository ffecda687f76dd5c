import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// A message is ThreadDesk's the moment it is accepted: kept in the outbox, delivered to Discord
/// in the user's order when Discord allows, each once. The server's clock is the test's, so a
/// delivery's backoff passes when the test says so.
@Suite("The outbox")
struct OutboxTests {
    /// While Discord is down: an edit changes the text Discord will get, a delete means Discord
    /// never sees the message; the rest goes out in order once Discord is back.
    @Test func aQueuedMessageIsEditedOrDeletedBeforeDiscordSeesIt() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            // Discord takes no post (its reads still answer: a poll without the gateway reads it).
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1000, status: 503)
            let typo = try await server.accept("helo", token: user.token)
            let dropped = try await server.accept("never mind", token: user.token)
            let last = try await server.accept("last", token: user.token)
            try await server.settled(driving: clock)
            let typoID = try #require(typo.json["id"]?.stringValue)
            let droppedID = try #require(dropped.json["id"]?.stringValue)

            let edited = try await server.request(.patch, "/v1/messages/\(typoID)", token: user.token, json: #"{"content":"hello"}"#)
            #expect(edited.status == .ok)
            #expect(edited.json["content"] == "hello" && edited.json["delivery"] == "queued" && edited.json["editedAt"] != nil)
            // The edit is tried at once (and fails again); while a delivery holds the queue, an
            // edit or delete of a waiting message is a 409: let it end.
            try await server.settled(driving: clock)
            #expect(try await server.request(.delete, "/v1/messages/\(droppedID)", token: user.token).status == .noContent)
            let waiting = try await server.messages(token: user.token)
            #expect(waiting.map { $0["content"]?.stringValue } == ["first", "hello", "last"])
            #expect(waiting.map { $0["delivery"]?.stringValue } == ["sent", "queued", "queued"])
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["first"])

            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 0)
            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["first", "hello", "last"])
            let delivered = try await server.messages(token: user.token)
            #expect(delivered.map { $0["id"] } == [waiting[0]["id"], typo.json["id"], last.json["id"]])
            #expect(delivered.allSatisfy { $0["delivery"] == "sent" })
            // Gone for good: another delete finds nothing.
            #expect(try await server.request(.delete, "/v1/messages/\(droppedID)", token: user.token).status == .notFound)
        }
    }

    /// A message Discord refuses for good is `failed`, with Discord's reason, and the user's next
    /// message goes on; editing the failed one sends it again.
    @Test func aMessageDiscordRefusesFailsAndTheNextGoesOn() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 400)
            let refused = try await server.send("refused", token: user.token)
            #expect(try await server.send("goes on", token: user.token).status == .created)
            #expect(server.emulator.messages(inThread: thread).map(\.content).suffix(1) == ["goes on"])
            let listed = try await server.messages(token: user.token)
            let failed = try #require(listed.first { $0["id"] == refused.json["id"] })
            #expect(failed["delivery"] == "failed")
            #expect(failed["deliveryError"]?["code"] == "50035")
            #expect(listed.last?["content"] == "goes on" && listed.last?["delivery"] == "sent")
            #expect(try await server.metric(#"threaddesk_outbox_failures_total{code="50035"}"#) == 1)

            let id = try #require(refused.json["id"]?.stringValue)
            let retried = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"refused, sent again"}"#)
            #expect(retried.status == .ok && retried.json["delivery"] == "queued")
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).map(\.content).suffix(2) == ["goes on", "refused, sent again"])
            #expect(try await server.messages(token: user.token).first { $0["id"] == refused.json["id"] }?["delivery"] == "sent")
        }
    }

    /// A first message that meets Discord's pace (the forum's thread-create window spent, its
    /// turn further off than a call's budget) waits for that turn: no failure counts toward its
    /// backoff, and Discord is not taken for down (no "Discord is back" rush of every queue).
    @Test func aMessageWaitingOnDiscordsPaceIsTriedWhenItsTurnComes() async throws {
        var emulator = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
        emulator.threadCreateLimit = .init(limit: 1, window: .seconds(120))
        try await withServer(emulator: emulator, { $0.discordBudget = .seconds(2) }) { server in
            let first = try await server.session()
            #expect(try await server.send("the window's one thread", token: first.token).status == .created)
            let second = try await server.session()
            let accepted = try await server.accept("the next thread", token: second.token)
            let id = try #require(Snowflake(accepted.json["id"]?.stringValue ?? ""))
            try await server.settled()
            let item = try #require(try await server.store.outboxItem(id))
            #expect(item.isQueued && item.attempts == 0)
            // Tried once Discord's window has passed (about two minutes), not at 1, 2, 4 s.
            #expect(item.nextAttempt.timeIntervalSinceNow > 60)
            #expect(server.emulator.counters.requests("POST", "/channels/{channel_id}/threads") == 1)
        }
    }

    /// A message of two posts whose second Discord refuses for good: `failed`, its first post in
    /// Discord. Retried with its own text it goes on from the refused post; another text cannot
    /// be (409 `partly_delivered`); deleted, its post in Discord goes too.
    @Test func aMessagePartlyInDiscordWhenRefusedIsRetriedFromThereOrDeletedWhole() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let before = server.emulator.messages(inThread: thread).count
            let long = Array(repeating: "word", count: 600).joined(separator: " ")
            // The first post goes through, the second is refused for good.
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 400, after: 1)
            let sent = try await server.send(long, token: user.token)
            let id = try #require(sent.json["id"]?.stringValue)
            #expect(server.emulator.messages(inThread: thread).count == before + 1)
            let listed = try await server.messages(token: user.token)
            let failed = try #require(listed.first { $0["id"]?.stringValue == id })
            // Failed, showing the whole text the user wrote (what a retry sends), whatever a read of Discord finds.
            #expect(failed["delivery"] == "failed" && failed["content"]?.stringValue == long)

            let other = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"something else"}"#)
            #expect(other.status == .conflict && other.errorCode == "partly_delivered")
            let body = String(decoding: try JSONEncoder().encode(["content": long]), as: UTF8.self)
            let retried = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: body)
            #expect(retried.status == .ok && retried.json["delivery"] == "queued")
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == before + 2, "the refused post only, once")
            #expect(try await server.messages(token: user.token).first { $0["id"]?.stringValue == id }?["delivery"] == "sent")
            // The whole text in Discord: the first post and the one posted on the retry.
            let words = server.emulator.messages(inThread: thread).suffix(2).map(\.content).joined(separator: " ")
            #expect(words.split(separator: " ").filter { $0 == "word" }.count == 600)

            // Again, and deleted this time: nothing of it stays in Discord or in the conversation.
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 400, after: 1)
            let again = try await server.send(long, token: user.token)
            let second = try #require(again.json["id"]?.stringValue)
            #expect(server.emulator.messages(inThread: thread).count == before + 3)
            #expect(try await server.request(.delete, "/v1/messages/\(second)", token: user.token).status == .noContent)
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == before + 2)
            #expect(try await server.messages(token: user.token).allSatisfy { $0["id"]?.stringValue != second })
        }
    }

    /// A message refused part-way whose first post an agent deleted in Discord meanwhile: retried,
    /// its rest is posted, the message is deleted as its first post was, and the queue goes on.
    @Test func aRetriedMessageWhoseFirstPostIsGoneEndsDeletedAndTheQueueGoesOn() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let long = Array(repeating: "word", count: 600).joined(separator: " ")
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 400, after: 1)
            let sent = try await server.send(long, token: user.token)
            let id = try #require(sent.json["id"]?.stringValue)
            let first = try #require(server.emulator.messages(inThread: thread).last)
            try server.emulator.deleteMessage(first.id, inChannel: thread)

            let body = String(decoding: try JSONEncoder().encode(["content": long]), as: UTF8.self)
            #expect(try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: body).status == .ok)
            #expect(try await server.send("next one", token: user.token).status == .created)
            #expect(server.emulator.messages(inThread: thread).last?.content == "next one")
            let listed = try await server.messages(token: user.token)
            #expect(listed.allSatisfy { $0["id"]?.stringValue != id })
            #expect(listed.map { $0["delivery"]?.stringValue } == listed.map { _ in "sent" }, "\(listed.map { ($0["id"], $0["content"]?.stringValue?.prefix(12), $0["partOf"]) })")
            #expect(listed.contains { $0["content"] == "next one" })
            #expect(try await server.metric("threaddesk_outbox_depth") == 0)
        }
    }

    /// Discord's answer to a post is lost: the next attempt carries the same nonce and Discord
    /// answers with the post it has. Once in Discord, whatever the answers.
    @Test func aPostWhoseAnswerIsLostIsInDiscordOnce() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let (user, thread, _) = try await server.userWithThread()
            server.emulator.loseAnswers("POST", "/channels/{channel_id}/messages", count: 3)
            #expect(try await server.accept("once", token: user.token).status == .created)
            for _ in 0..<4 {
                try await server.settled(driving: clock)
                clock.advance(by: .seconds(61))
            }
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).filter { $0.content == "once" }.count == 1)
            #expect(try await server.messages(token: user.token).last?["delivery"] == "sent")
        }
    }

    /// The files of a message Discord does not have yet are served from the outbox.
    @Test func filesOfAQueuedMessageAreServedFromTheStore() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let (user, _, _) = try await server.userWithThread()
            server.emulator.injectServerErrors(count: 1000, status: 503)
            let bytes = Data("a log the app sent\n".utf8)
            let (body, type) = AttachmentTests.multipart([
                .init(name: "content", data: Data("see the log".utf8)),
                .init(name: "files", filename: "app.log", contentType: "text/plain", data: bytes),
            ])
            let sent = try await server.request(
                .post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "log"], raw: body, contentType: type)
            #expect(sent.status == .created && sent.json["delivery"] == "queued")
            let attachment = try #require(sent.json["attachments"]?[0])
            #expect(attachment["filename"] == "app.log" && attachment["size"]?.intValue == bytes.count)
            let url = try #require(attachment["url"]?.stringValue)
            let download = try await server.request(.get, url, token: user.token)
            #expect(download.status == .ok && download.body == bytes)
            // Another user gets nothing of it.
            let other = try await server.session()
            #expect(try await server.request(.get, url, token: other.token).status == .notFound)
            // Delivered: the file keeps its id and link (now served from Discord's CDN).
            server.emulator.injectServerErrors(count: 0, status: 503)
            for _ in 0..<3 {
                clock.advance(by: .seconds(61))
                try await server.settled(driving: clock)
            }
            let listed = try #require(try await server.messages(token: user.token).last)
            #expect(listed["delivery"] == "sent" && listed["attachments"]?[0]?["id"] == attachment["id"], "\(listed)")
            let delivered = try await server.request(.get, url, token: user.token)
            #expect(delivered.status == .ok && delivered.body == bytes)
        }
    }

    /// Discord down: every user's queue backs off. The first message Discord takes again makes
    /// every waiting queue due at once, not when its backoff (up to a minute) runs out.
    @Test func whenDiscordTakesAMessageAgainEveryWaitingQueueGoesAtOnce() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let (alice, aliceThread, _) = try await server.userWithThread()
            let (bob, bobThread, _) = try await server.userWithThread()
            let (carol, carolThread, _) = try await server.userWithThread()
            server.emulator.injectServerErrors(count: 100_000, status: 503)
            #expect(try await server.accept("alice waits", token: alice.token).status == .created)
            #expect(try await server.accept("bob waits", token: bob.token).status == .created)
            // Several failed tries: the backoffs grow past what settling moves the clock by.
            for _ in 0..<5 {
                try await server.settled(driving: clock)
                clock.advance(by: .seconds(5))
            }
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: aliceThread).last?.content != "alice waits")
            server.emulator.injectServerErrors(count: 0, status: 503)
            #expect(try await server.accept("carol is first", token: carol.token).status == .created)
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: carolThread).last?.content == "carol is first")
            #expect(server.emulator.messages(inThread: aliceThread).last?.content == "alice waits")
            #expect(server.emulator.messages(inThread: bobThread).last?.content == "bob waits")
        }
    }

    /// What one user may keep waiting is bounded: past it, 503 `busy` with Retry-After, and what
    /// was accepted stays.
    @Test func aUsersWaitingMessagesAreCapped() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.outbox.maxMessagesPerUser = 2; $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            server.emulator.injectServerErrors(count: 1000, status: 503)
            #expect(try await server.accept("one", token: user.token).status == .created)
            #expect(try await server.accept("two", token: user.token).status == .created)
            let third = try await server.accept("three", token: user.token)
            #expect(third.status == .serviceUnavailable && third.errorCode == "busy")
            #expect(third.headers[.retryAfter] != nil)
            // Another user is not held up by this one's queue.
            let other = try await server.session()
            #expect(try await server.accept("mine", token: other.token).status == .created)
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == ["one", "two"])
            try await server.settled(driving: clock)
            #expect(try await server.metric("threaddesk_outbox_depth") == 3)
        }
    }
}
