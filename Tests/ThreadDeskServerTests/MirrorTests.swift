import APNsEmulator
import AsyncHTTPClient
import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// The conversation mirror, against the emulators and a real SQLite file.
@Suite("The conversation mirror", .timeLimit(.minutes(2)))
struct MirrorTests {
    static func messageReads(_ server: Harness) -> Int {
        server.emulator.counters.requests("GET", "/channels/{channel_id}/messages")
            + server.emulator.counters.requests("GET", "/channels/{channel_id}/messages/{message_id}")
    }

    static func events(_ events: [ForumEvent]) throws -> String {
        String(decoding: try JSONEncoder().encode(["events": events]), as: UTF8.self)
    }

    /// Waits until the reconciliations asked for so far have run (the start's, a gap's): `runs`
    /// of them, and the last gap reconciled. (A count alone can be met by a run that started
    /// before the latest gap, with that gap's own run, and its Discord reads, still to come.)
    static func reconciled(_ server: Harness, runs: Double = 1) async throws {
        try await server.settled()
        let epoch = try await server.store.globalValue("feed.epoch").flatMap { Int($0) } ?? 0
        let reconciled = try await server.store.globalValue("feed.reconciled-epoch").flatMap { Int($0) } ?? 0
        try #require(try await server.metric("threaddesk_catch_ups_total") >= runs && reconciled >= epoch, "\(Int(runs)) reconciliation(s), the last gap included")
    }

    @Test func pollsWithALiveFeedNeverReadDiscordAndShowEditsAndDeletes() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "typo")
            let wrong = try server.emulator.replyAsAgent(inThread: thread, content: "wrong thread, sorry")
            try await server.settled()
            try #require(try await server.mirrored(wrong.id) != nil, "both replies mirrored")
            try await Self.reconciled(server)
            _ = try await server.messages(token: user.token)
            let reads = Self.messageReads(server)
            var shown = 0
            for _ in 0..<200 { shown += try await server.messages(token: user.token).count }
            #expect(shown == 200 * 3)
            #expect(Self.messageReads(server) == reads)

            try server.emulator.editMessage(reply.id, inChannel: thread, content: "fixed")
            try server.emulator.deleteMessage(wrong.id, inChannel: thread)
            try await server.settled()
            try #require(try await server.mirrored(wrong.id)?.deleted == true, "the deletion mirrored")
            try await server.settled()
            try #require(try await server.mirrored(reply.id)?.content == "fixed", "the edit mirrored")
            let seen = try await server.messages(token: user.token)
            #expect(seen.map { $0["content"]?.stringValue } == ["hello", "fixed"])
            #expect(seen[1]["editedAt"]?.stringValue != nil)
            #expect(Self.messageReads(server) == reads)
        }
    }

    @Test func legacyPollsWithALiveFeedNeverReadDiscordAndKeepTheirWireShape() async throws {
        try await withServer(gateway: true, { $0.legacyAPIKey = "legacy-key" }) { server in
            let key: HTTPFields = [.init("x-api-key")!: "legacy-key"]
            let first = #"{"content":"from the old app","userId":"k7q-2mz-9xa"}"#
            #expect(try await server.request(.post, "/new-message", headers: key, json: first).status == .ok)
            try await server.settled()
            let thread = try #require(try await server.thread(of: "k7q-2mz-9xa"))
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "hello from support")
            try server.emulator.postNote(inThread: thread, content: ":ninja: internal")
            try await server.settled()
            try #require(try await server.mirrored(reply.id) != nil, "the reply mirrored")
            try await Self.reconciled(server)
            _ = try await server.request(.get, "/messages/k7q-2mz-9xa", headers: key)
            let reads = Self.messageReads(server)
            for _ in 0..<50 {
                let page = try await server.request(.get, "/messages/k7q-2mz-9xa", headers: key)
                #expect(page.status == .ok)
                let messages = page.json.arrayValue ?? []
                // Newest first, Discord's own fields, no note.
                #expect(messages.map { $0["content"]?.stringValue } == ["hello from support", "from the old app"])
                #expect(messages.first?["author"]?["username"]?.stringValue == "support-agent")
                #expect(messages.first?["type"]?.intValue == 0)
            }
            let after = try await server.request(.get, "/messages/k7q-2mz-9xa?after=\(reply.id)", headers: key)
            #expect(after.json.arrayValue?.isEmpty == true)
            #expect(Self.messageReads(server) == reads)
        }
    }

    @Test func theUserEditsAndDeletesTheirOwnMessagesAndNothingElse() async throws {
        try await withServer { server in
            let alice = try await server.session()
            let bob = try await server.session()
            let mine = try await server.send("first version", token: alice.token).json
            let theirs = try await server.send("bob's", token: bob.token).json
            let aliceThread = try #require(try await server.thread(of: alice.userId))
            let myID = try #require(mine["id"]?.stringValue)
            let theirID = try #require(theirs["id"]?.stringValue)

            let edited = try await server.request(.patch, "/v1/messages/\(myID)", token: alice.token, json: #"{"content":"second version"}"#)
            #expect(edited.status == .ok)
            #expect(edited.json["content"]?.stringValue == "second version")
            #expect(edited.json["editedAt"]?.stringValue != nil)
            // Discord has the new text (Discord's id of the post stays inside ThreadDesk).
            #expect(server.emulator.messages(inThread: aliceThread).map(\.content) == ["second version"])

            // Someone else's message, support's, a note, an unknown id: all the same 404.
            let reply = try server.emulator.replyAsAgent(inThread: aliceThread, content: "from support")
            let note = try server.emulator.postNote(inThread: aliceThread, content: ":ninja: internal")
            for id in [theirID, reply.id, note.id, "123456789012345678"] {
                let patch = try await server.request(.patch, "/v1/messages/\(id)", token: alice.token, json: #"{"content":"mine now"}"#)
                #expect(patch.status == .notFound, "PATCH \(id)")
                #expect(patch.errorCode == "message_not_found")
                let delete = try await server.request(.delete, "/v1/messages/\(id)", token: alice.token)
                #expect(delete.status == .notFound, "DELETE \(id)")
            }
            #expect(try await server.request(.delete, "/v1/messages/abc", token: alice.token).status == .badRequest)
            #expect(try await server.request(.delete, "/v1/messages/\(myID)").status == .unauthorized)
            #expect(server.emulator.messages(inThread: aliceThread).contains { $0.id == reply.id && $0.content == "from support" })

            #expect(try await server.request(.delete, "/v1/messages/\(myID)", token: alice.token).status == .noContent)
            #expect(!server.emulator.messages(inThread: aliceThread).contains { $0.content == "second version" })
            #expect(try await server.messages(token: alice.token).map { $0["content"]?.stringValue } == ["from support"])
            #expect(try await server.request(.delete, "/v1/messages/\(myID)", token: alice.token).status == .notFound)
        }
    }

    @Test func aSplitMessageIsEditedAndDeletedAsAWhole() async throws {
        try await withServer { server in
            let user = try await server.session()
            let long = String(repeating: "a", count: 1990) + " " + String(repeating: "b", count: 500)
            let sent = try await server.send(long, token: user.token).json
            let thread = try #require(try await server.thread(of: user.userId))
            // Two posts in Discord; the app lists them as the message (its id) and its second part.
            let posts = server.emulator.messages(inThread: thread).map(\.id)
            #expect(posts.count == 2)
            let parts = try await server.messages(token: user.token).compactMap { $0["id"]?.stringValue }
            try #require(parts.count == 2)
            #expect(parts[0] == sent["id"]?.stringValue)

            // 2,999 emoji: within the 4,000 characters a message may have, but three Discord posts.
            let tooLong = String(repeating: "😀", count: 2999)
            let refused = try await server.request(
                .patch, "/v1/messages/\(parts[1])", token: user.token, json: #"{"content":"\#(tooLong)"}"#)
            #expect(refused.status == .unprocessableContent, "\(String(decoding: refused.body, as: UTF8.self).prefix(300))")
            #expect(refused.errorCode == "edit_too_long")

            // Through any part, the whole send: the first post takes the text, the rest go.
            let edited = try await server.request(.patch, "/v1/messages/\(parts[1])", token: user.token, json: #"{"content":"short now"}"#)
            #expect(edited.status == .ok)
            #expect(server.emulator.messages(inThread: thread).map(\.id) == [posts[0]])
            #expect(server.emulator.messages(inThread: thread).first?.content == "short now")
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == ["short now"])

            let second = try await server.send(long, token: user.token).json
            #expect(server.emulator.messages(inThread: thread).count == 3)
            let secondID = try #require(second["id"]?.stringValue)
            #expect(try await server.request(.delete, "/v1/messages/\(secondID)", token: user.token).status == .noContent)
            #expect(server.emulator.messages(inThread: thread).map(\.id) == [posts[0]])
        }
    }

    @Test func replayingEveryEventTwiceInAnyOrderChangesNothing() async throws {
        try await withServer { server in
            let (user, thread, device) = try await server.userWithThread()
            let discord = server.discordClient
            let one = try server.emulator.replyAsAgent(inThread: thread, content: "one")
            let two = try server.emulator.replyAsAgent(inThread: thread, content: "two")
            let note = try server.emulator.postNote(inThread: thread, content: ":ninja: internal")
            var created: [DiscordMessage] = []
            for id in [one.id, two.id, note.id] { created.append(try await discord.message(id, in: thread)) }
            try server.emulator.editMessage(one.id, inChannel: thread, content: "one, edited")
            let edited = try await discord.message(one.id, in: thread)
            try server.emulator.deleteMessage(two.id, inChannel: thread)
            let own = try #require(try await discord.messages(in: thread, limit: 100).last)
            let events: [ForumEvent] =
                created.map(ForumEvent.messageCreated) + [
                    .messageCreated(own), .messageUpdated(edited), .messageDeleted(channelID: thread, messageID: two.id),
                ]

            #expect(try await server.forward(try Self.events(events)).status == .ok)
            try await Self.reconciled(server)
            // Facts are ingested in order per user: once a marker after them is in, so are they.
            let first = try server.emulator.replyAsAgent(inThread: thread, content: "first marker")
            #expect(try await server.forward(try Self.events([.messageCreated(try await discord.message(first.id, in: thread))])).status == .ok)
            try await server.settled()
            try #require(try await server.pushState(of: first.id) == .sent, "the first marker pushed")
            try await server.settled()
            try #require(try await server.store.nextPushDue() == nil, "no push left pending")
            #expect(try await server.mirrored(one.id)?.content == "one, edited")
            let ids = [one.id, two.id, note.id, own.id].compactMap { Snowflake($0) }
            #expect(ids.count == 4)
            let before = Set(try await server.store.mirroredMessages(ids))
            let pushed = server.apns.deliveries(to: device).count
            #expect(pushed >= 1)

            for order in [events.shuffled(), events.reversed(), events.shuffled()] {
                #expect(try await server.forward(try Self.events(order)).status == .ok)
            }
            // The replay went through the same per-user queue: a marker behind it shows it is done.
            let marker = try server.emulator.replyAsAgent(inThread: thread, content: "marker")
            #expect(try await server.forward(try Self.events([.messageCreated(try await discord.message(marker.id, in: thread))])).status == .ok)
            try await server.settled()
            try #require(try await server.pushState(of: marker.id) == .sent, "the marker pushed")
            #expect(Set(try await server.store.mirroredMessages(ids)) == before)
            #expect(server.apns.deliveries(to: device).count == pushed + 1)
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == ["hello", "one, edited", "first marker", "marker"])
        }
    }

    @Test func afterAGapTheMirrorMatchesDiscordAndEachNewReplyIsPushedOnce() async throws {
        try await withServer { server in
            let (user, thread, device) = try await server.userWithThread()
            let discord = server.discordClient
            let kept = try server.emulator.replyAsAgent(inThread: thread, content: "kept")
            let doomed = try server.emulator.replyAsAgent(inThread: thread, content: "deleted during the gap")
            let live = [try await discord.message(kept.id, in: thread), try await discord.message(doomed.id, in: thread)]
            #expect(try await server.forward(try Self.events([.alive] + live.map(ForumEvent.messageCreated))).status == .ok)
            try await server.settled()
            try #require(try await server.pushState(of: doomed.id) == .sent, "both pushed")
            try await Self.reconciled(server)
            let runs = try await server.metric("threaddesk_catch_ups_total")

            // The feed misses all of this.
            try server.emulator.editMessage(kept.id, inChannel: thread, content: "kept, edited")
            try server.emulator.deleteMessage(doomed.id, inChannel: thread)
            let missed = try server.emulator.replyAsAgent(inThread: thread, content: "sent during the gap")
            #expect(try await server.forward(try Self.events([.gap])).status == .ok)
            try await Self.reconciled(server, runs: runs + 1)
            try await server.settled()
            try #require(try await server.pushState(of: missed.id) == .sent, "the missed reply pushed")

            let reads = Self.messageReads(server)
            let shown = try await server.messages(token: user.token)
            let truth = server.emulator.messages(inThread: thread).filter { !$0.content.hasPrefix(":ninja:") && $0.type == 0 }
            // Support's messages by Discord's ids; the user's own by the id it was accepted with.
            #expect(shown.map { $0["id"]?.stringValue }.dropFirst() == truth.map(\.id).dropFirst())
            #expect(shown.count == truth.count)
            #expect(shown.map { $0["content"]?.stringValue } == ["hello", "kept, edited", "sent during the gap"])
            #expect(Self.messageReads(server) == reads)
            #expect(server.apns.deliveries(to: device).compactMap(PushTests.messageID).sorted() == [kept.id, doomed.id, missed.id].sorted())
        }
    }

    @Test func anAPNsOutageForOneUserEndsWithTheirReplyDeliveredOnceWhateverOthersGot() async throws {
        // On a clock the test drives: the push's backoffs (60 s and up) pass when the test moves the
        // clock (and now and then one more with the short sleeps `settled(driving:)` passes).
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock), {
            $0.push.retryBase = .seconds(60)
            $0.push.retryCap = .seconds(600)
            $0.apns?.budget = .seconds(2)
        }) { server in
            let (_, first, firstDevice) = try await server.userWithThread(device: String(repeating: "ab", count: 32))
            let (_, second, secondDevice) = try await server.userWithThread(device: String(repeating: "cd", count: 32))
            server.apns.setPermanentOutcome(.reject(status: 503, reason: "ServiceUnavailable"), for: firstDevice)
            let waiting = try server.emulator.replyAsAgent(inThread: first, content: "for the first user")
            try await server.settled(driving: clock)
            for _ in 0..<2 {
                clock.advance(by: .seconds(600))
                try await server.settled(driving: clock)
            }
            #expect(try await server.metric(#"threaddesk_pushes_total{outcome="unavailable"}"#) >= 3)
            // Another user's push succeeds meanwhile; it skips nothing.
            let other = try server.emulator.replyAsAgent(inThread: second, content: "for the second user")
            try await server.settled(driving: clock)
            #expect(try await server.pushState(of: other.id) == .sent)
            #expect(server.apns.deliveries(to: secondDevice).map(PushTests.messageID) == [other.id])
            guard case .pending? = try await server.pushState(of: waiting.id) else {
                Issue.record("the first user's push is no longer pending")
                return
            }
            server.apns.setPermanentOutcome(nil, for: firstDevice)
            clock.advance(by: .seconds(600))
            try await server.settled(driving: clock)
            #expect(try await server.pushState(of: waiting.id) == .sent)
            #expect(server.apns.deliveries(to: firstDevice).map(PushTests.messageID) == [waiting.id])
        }
    }

    @Test func aUserWithAHundredQueuedSendsDoesNotDelayAnotherUsersPush() async throws {
        // The last of 100 queued sends waits for the 99 before it, each behind the owner's lock, which
        // gives up after 30 s: on a machine busy with the rest of the suite a send takes up to
        // 100 ms here, so a longer queue would test the lock's deadline instead.
        try await withServer(gateway: true, { $0.requestTimeout = .seconds(90) }) { server in
            let (busy, _, _) = try await server.userWithThread(device: String(repeating: "ab", count: 32))
            let (_, quietThread, quietDevice) = try await server.userWithThread(device: String(repeating: "cd", count: 32))
            let posted = { server.emulator.counters.requests("POST", "/channels/{channel_id}/messages") }
            let start = posted()
            server.emulator.setLatency(.milliseconds(20))
            // A client of its own with a connection per send, so all 100 wait in the server.
            var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: .seconds(90)))
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 100
            try await withOwnHTTPClient(configuration) { http in
                let url = "http://127.0.0.1:\(try #require(server.client.port))/v1/messages"
                let sends = Task {
                    try await withThrowingTaskGroup(of: UInt.self) { group in
                        for index in 0..<100 {
                            group.addTask {
                                var request = HTTPClientRequest(url: url)
                                request.method = .POST
                                request.headers.add(name: "Authorization", value: "Bearer \(busy.token)")
                                request.headers.add(name: "Idempotency-Key", value: "queued-\(index)")
                                request.headers.add(name: "Content-Type", value: "application/json")
                                request.body = .bytes(ByteBuffer(string: #"{"content":"queued \#(index)"}"#))
                                // As an app does: a 503 (the user's queue outlasted a wait on a busy
                                // machine) is retried with the same key, which posts nothing twice.
                                for _ in 1..<5 {
                                    let status = try await http.execute(request, timeout: .seconds(90)).status.code
                                    if status != 503 { return status }
                                }
                                return try await http.execute(request, timeout: .seconds(90)).status.code
                            }
                        }
                        return try await group.reduce(into: [UInt]()) { $0.append($1) }
                    }
                }
                defer { sends.cancel() }
                try await server.emulator.waitUntil("the busy user's sends under way") { _ in posted() - start >= 10 }
                let reply = try server.emulator.replyAsAgent(inThread: quietThread, content: "for the quiet user")
                try await server.apns.waitUntil("the quiet user's push") { !$0.deliveries(to: quietDevice).isEmpty }
                let doneWhenPushed = posted() - start
                #expect(doneWhenPushed < 100, "the push waited for the whole queue")
                #expect(server.apns.deliveries(to: quietDevice).map(PushTests.messageID) == [reply.id])
                let statuses = try await sends.value
                #expect(statuses.count == 100)
                #expect(statuses.filter { $0 != 201 } == [])
                try await server.settled()
                #expect(posted() - start == 100)
            }
        }
    }
}
