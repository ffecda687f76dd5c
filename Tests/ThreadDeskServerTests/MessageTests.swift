import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Sending messages")
struct MessageTests {
    @Test func theFirstMessageStartsTheThreadInOneCall() async throws {
        try await withServer { server in
            let user = try await server.session(#"{"installation":{"appVersion":"1.4.0","buildVersion":"142","osPlatform":"iOS"}}"#)
            let reply = try await server.send("My app crashes on launch", token: user.token)
            #expect(reply.status == .created)
            #expect(reply.json["author"] == "user")
            #expect(reply.json["content"] == "My app crashes on launch")
            // Kept by ThreadDesk when answered; Discord got it afterwards, and the id stayed.
            #expect(reply.json["delivery"] == "queued")
            let id = try #require(reply.json["id"]?.stringValue)
            let thread = try #require(try await server.thread(of: user.userId))
            let listed = try await server.messages(token: user.token)
            #expect(listed.map { $0["id"]?.stringValue } == [id])
            #expect(listed.first?["delivery"] == "sent")
            #expect(id != thread)  // Discord's id of the starter post (the thread's) stays inside
            let snapshot = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(snapshot.name == "My app crashes on launch · 1.4.0 (142)")
            #expect(snapshot.parentID == server.discord.forumChannelID)
            #expect(server.emulator.counters.requests("POST", "/channels/{channel_id}/threads") == 1)
            // Nothing was cut short before, so there is no thread to look for first.
            #expect(server.emulator.counters.requests("GET", "/guilds/{guild_id}/threads/active") == 0)

            #expect(try await server.send("Second message", token: user.token).status == .created)
            let posted = server.emulator.messages(inThread: thread)
            #expect(posted.map(\.content).filter { !$0.hasPrefix(":ninja:") } == ["My app crashes on launch", "Second message"])
            #expect(posted.allSatisfy { $0.authorIsBot })
            #expect(server.emulator.counters.requests("POST", "/channels/{channel_id}/threads") == 1)
        }
    }

    @Test func threadNamesFitDiscordsLimitInUTF16Units() async throws {
        try await withServer { server in
            // 60 rockets are 60 characters but 120 UTF-16 units, as Discord counts the name.
            let rockets = String(repeating: "🚀", count: 60)
            let user = try await server.session(#"{"installation":{"appVersion":"\#(rockets)"}}"#)
            #expect(try await server.send(rockets, token: user.token).status == .created)
            let thread = try #require(server.emulator.threads().first)
            #expect(thread.name.utf16.count <= 100)
            // The excerpt is cut in whole characters, by UTF-16 units: 29 rockets and an ellipsis.
            #expect(thread.name.hasPrefix(String(repeating: "🚀", count: 29) + "… · 🚀"))
        }
    }

    @Test func userTextPingsNobody() async throws {
        try await withServer { server in
            let user = try await server.session()
            #expect(try await server.send("@everyone @here <@\(server.discord.agentUserID)> help", token: user.token).status == .created)
            #expect(try await server.send("again @everyone", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.messages(inThread: thread).allSatisfy { !$0.mentionEveryone })
            #expect(server.emulator.counters.everyonePings == 0)
            let bodies = server.emulator.recordedRequests.compactMap(\.body)
            #expect(bodies.allSatisfy { ($0["allowed_mentions"] ?? $0["message"]?["allowed_mentions"]) == ["parse": []] })
        }
    }

    @Test func aRetriedKeyAnswersTheSameAndPostsNothing() async throws {
        try await withServer { server in
            let user = try await server.session()
            let first = try await server.send("only once", token: user.token, key: "key-1")
            let retry = try await server.send("only once", token: user.token, key: "key-1")
            #expect(first.status == .created && retry.status == .created)
            // The same message, as it stands now (delivered since the first answer).
            #expect(first.json["id"] != nil && first.json["id"] == retry.json["id"])
            #expect(retry.json["delivery"] == "sent")
            #expect(server.discordPosts == 1)
            let misuse = try await server.send("something else", token: user.token, key: "key-1")
            #expect(misuse.status == .unprocessableContent)
            #expect(misuse.errorCode == "idempotency_key_reused")
            #expect(server.discordPosts == 1)
            // Keys belong to a user: another user's same key is a new message.
            let other = try await server.session()
            #expect(try await server.send("only once", token: other.token, key: "key-1").status == .created)
            #expect(server.discordPosts == 2)
        }
    }

    @Test func fiftyConcurrentFirstMessagesMakeOneThreadAndFiftyPosts() async throws {
        // The last send waits for the 49 before it: a deadline and a Discord budget no busy
        // machine runs out of, since what is checked is the outcome, not the speed.
        try await withServer({ $0.requestTimeout = .seconds(100); $0.discordBudget = .seconds(60) }) { server in
            let user = try await server.session()
            // A client with a connection per request: all fifty wait in the server, not in a client pool.
            let client = ReplicaTests.Client(port: try #require(server.client.port), http: EventStreamClient.http)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let headers: HTTPFields = [.authorization: "Bearer \(user.token)", .init("Idempotency-Key")!: "k\(index)"]
                        return try await client.call(.post, "/v1/messages", headers: headers, json: #"{"content":"message \#(index)"}"#).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .created })
            try await server.settled()
            #expect(server.emulator.threads().count == 1)
            let thread = try #require(try await server.thread(of: user.userId))
            let contents = server.emulator.messages(inThread: thread).map(\.content)
            #expect(contents.count == 50)
            #expect(Set(contents) == Set((0..<50).map { "message \($0)" }))
            #expect(server.emulator.counters.rateLimited == 0)
        }
    }

    @Test func longTextIsSplitIntoDiscordSizedPosts() async throws {
        try await withServer { server in
            let user = try await server.session()
            let paragraph = String(repeating: "word ", count: 300)  // 1500 characters
            let text = [paragraph, paragraph, "👍🏽 done"].joined(separator: "\n\n").trimmingCharacters(in: .whitespaces)
            let reply = try await server.send(text, token: user.token)
            #expect(reply.status == .created)
            #expect(reply.json["content"]?.stringValue == text)
            let thread = try #require(try await server.thread(of: user.userId))
            let posted = server.emulator.messages(inThread: thread)
            #expect(posted.count == 2)
            // The app lists it under the id it was accepted with: its first part, then the second.
            let listed = try await server.messages(token: user.token)
            #expect(listed.map { $0["content"]?.stringValue } == posted.map(\.content))
            #expect(listed.first?["id"] == reply.json["id"])
            #expect(posted.allSatisfy { $0.content.utf16.count <= 2000 })
            // Cut at the paragraph break, not mid-word.
            #expect(posted.first?.content == paragraph.trimmingCharacters(in: .whitespaces))
            #expect(posted.last?.content.hasSuffix("\n\n👍🏽 done") == true)
        }
    }

    /// Discord down: the message is accepted and kept (201, `queued`), a retry of its key answers
    /// the same message, and it reaches Discord once Discord is back, once. The server's clock
    /// is the test's: the delivery's backoff passes when the test says so.
    @Test func discordDownKeepsTheMessageAndDeliversItOnceWhenBack() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token, key: "first").status == .created)

            server.emulator.injectServerErrors(count: 1000, status: 502)
            let kept = try await server.accept("during the outage", token: user.token, key: "outage-1")
            #expect(kept.status == .created)
            #expect(kept.json["delivery"] == "queued")
            try await server.settled(driving: clock)
            let again = try await server.accept("during the outage", token: user.token, key: "outage-1")
            #expect(again.json["id"] == kept.json["id"])
            #expect(again.json["delivery"] == "queued")
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["first"])
            #expect(try await server.metric("threaddesk_outbox_failures_total{code=\"passing\"}") >= 1)

            server.emulator.injectServerErrors(count: 0)
            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).map(\.content) == ["first", "during the outage"])
            let listed = try await server.messages(token: user.token)
            #expect(listed.last?["id"] == kept.json["id"])
            #expect(listed.last?["delivery"] == "sent")
        }
    }

    /// Discord down before the user's first thread: the message is kept (listed, `queued`) and
    /// the thread is made with it when Discord is back: one thread, the message once.
    @Test func discordDownBeforeTheFirstThreadKeepsTheMessageForIt() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            server.emulator.injectServerErrors(count: 1000, status: 500)
            let kept = try await server.accept("hello?", token: user.token, key: "first-1")
            #expect(kept.status == .created)
            try await server.settled(driving: clock)
            #expect(try await server.thread(of: user.userId) == nil)
            let waiting = try await server.messages(token: user.token)
            #expect(waiting.map { $0["content"]?.stringValue } == ["hello?"])
            #expect(waiting.first?["delivery"] == "queued")

            server.emulator.injectServerErrors(count: 0)
            clock.advance(by: .seconds(61))
            try await server.settled(driving: clock)
            #expect(server.emulator.threads().count == 1)
            let thread = try #require(try await server.thread(of: user.userId))
            #expect(server.emulator.messages(inThread: thread).map(\.content).filter { !$0.hasPrefix(":ninja:") } == ["hello?"])
            let listed = try await server.messages(token: user.token)
            #expect(listed.map { $0["id"] } == [kept.json["id"]])
            #expect(listed.first?["delivery"] == "sent")
        }
    }

    /// The results kept for idempotency keys are pruned once past their retention: the store does
    /// not grow with every message ever sent. The server's clock is the test's: two days pass when
    /// the test says so, and not before.
    @Test func oldIdempotencyAnswersArePrunedWhileTheServerRuns() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock)) { $0.idempotencyRetention = .seconds(48 * 3600) } _: { server in
            let user = try await server.session()
            #expect(try await server.send("hello", token: user.token, key: "kept-for-two-days").status == .created)
            let id = try #require(UserID(user.userId))
            // An hour at a time (the pruner wakes at most hourly), each hour's round done, until the
            // result is gone (at most a few hours past its 48).
            try await server.settled()
            var hours = 0
            while try await server.store.withUser(id, idempotencyKey: "kept-for-two-days", { $0.keptResult }) != nil {
                guard hours < 60 else {
                    Issue.record("the result was not pruned within 60 hours")
                    break
                }
                clock.advance(by: .seconds(3600))
                hours += 1
                try await server.settled()
            }
            // Not a moment before its 48 hours were up.
            #expect(clock.now.offset >= .seconds(48 * 3600))
        }
    }
}
