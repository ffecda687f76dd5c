import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import AsyncHTTPClient
import HummingbirdTesting
import NIOFoundationCompat
import ServiceLifecycle
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Live conversation: events, typing, read receipts", .timeLimit(.minutes(2)))
struct LiveTests {
    static func stream(_ server: Harness, _ token: String, lastEventID: String? = nil) async throws -> EventStreamClient {
        let stream = try await EventStreamClient.open(port: try #require(server.client.port), token: token, lastEventID: lastEventID)
        #expect(stream.status == 200)
        // Every stream starts with the unread count (after a replay, if any).
        try await stream.next("the first unread count") { $0.name == "unread" }
        return stream
    }

    @Test func aStreamReceivesRepliesEditsAndDeletesButNeverNotes() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            let stream = try await Self.stream(server, user.token)
            defer { stream.close() }
            #expect(stream.headers["Content-Type"].first?.hasPrefix("text/event-stream") == true)
            #expect(stream.headers["Cache-Control"].first == "no-cache, no-transform")
            #expect(stream.headers["X-Accel-Buffering"].first == "no")

            try server.emulator.postNote(inThread: thread, content: "internal: refund approved")
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Hello from support")
            let created = try await stream.next("the reply") { $0.name == "message.created" && $0.json["id"] as? String == reply.id }
            #expect(created.json["content"] as? String == "Hello from support")
            #expect(created.json["author"] as? String == "support")
            let unread = try await stream.next("the new unread count") { $0.name == "unread" && $0.json["count"] as? Int == 1 }
            #expect(Int(unread.id ?? "") == Int(created.id ?? ""))

            try server.emulator.editMessage(reply.id, inChannel: thread, content: "Hello again from support")
            let updated = try await stream.next("the edit") { $0.name == "message.updated" }
            #expect(updated.json["content"] as? String == "Hello again from support")
            #expect(Int(updated.id ?? "") ?? 0 > Int(created.id ?? "") ?? 0)

            try server.emulator.deleteMessage(reply.id, inChannel: thread)
            let deleted = try await stream.next("the delete") { $0.name == "message.deleted" }
            #expect(deleted.json["id"] as? String == reply.id)
            try await stream.next("the unread count back to 0") { $0.name == "unread" && $0.json["count"] as? Int == 0 }

            // The note went into the mirror before the reply (same thread, same order), yet no event showed it.
            #expect(!stream.events.contains { $0.data.contains("refund approved") })
            let ids = stream.events.compactMap { $0.id.flatMap { Int64($0) } }
            #expect(ids == ids.sorted())
        }
    }

    @Test func lastEventIDReplaysExactlyTheMissedReplies() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            let token = user.token
            let first = try await Self.stream(server, token)
            let seen = try server.emulator.replyAsAgent(inThread: thread, content: "seen live")
            try await first.next("the first reply") { $0.json["id"] as? String == seen.id }
            try await first.next("its unread count") { $0.name == "unread" && $0.json["count"] as? Int == 1 }
            let resumeFrom = try #require(first.lastEventID)
            first.close()

            var missed: [String] = []
            for index in 1...3 { missed.append(try server.emulator.replyAsAgent(inThread: thread, content: "missed \(index)").id) }
            try await server.settled()
            try #require(try await server.store.mirroredMessages(missed.compactMap { Snowflake($0) }).count == 3, "the missed replies mirrored")

            let resumed = try await Self.stream(server, token, lastEventID: resumeFrom)
            defer { resumed.close() }
            let replayed = resumed.events(named: "message.created")
            #expect(replayed.map { $0.json["id"] as? String } == missed)
            #expect(resumed.events.allSatisfy { $0.name == "message.created" || $0.name == "unread" })
            #expect(resumed.events(named: "unread").last?.json["count"] as? Int == 4)

            // An id from nowhere (ahead of anything this server numbered) gets a reset, not a guess.
            let stranger = try await Self.stream(server, token, lastEventID: "999999999")
            defer { stranger.close() }
            #expect(stranger.events.first?.name == "reset")
            #expect(stranger.events(named: "message.created").isEmpty)

            let invalid = try await server.request(.get, "/v1/events", token: token, headers: [.init("Last-Event-ID")!: "abc"])
            #expect(invalid.status == .badRequest)
            #expect(invalid.errorCode == "invalid_last_event_id")
        }
    }

    @Test func agentTypingReachesTheStreamAndUserTypingIsCoalesced() async throws {
        // An interval no run of this test outlasts, however slow the machine: all 50 keystrokes
        // below fall inside it.
        try await withServer(gateway: true, { $0.live.typingInterval = .seconds(3600) }) { server in
            let (user, thread, _) = try await server.userWithThread()
            let stream = try await Self.stream(server, user.token)
            defer { stream.close() }
            let typed = Date()
            try server.emulator.typeAsAgent(inThread: thread)
            let typing = try await stream.next("the agent typing") { $0.name == "typing" }
            let heard = Date()
            // `typingExpiry` after the server learnt of it, which was between the two (the wire
            // carries whole seconds).
            let expiry = try #require((typing.json["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            let typingExpiry = server.configuration.live.typingExpiry / .seconds(1)
            #expect(expiry >= typed.addingTimeInterval(typingExpiry - 1) && expiry <= heard.addingTimeInterval(typingExpiry + 1))

            for _ in 0..<50 {
                let reply = try await server.request(.post, "/v1/typing", token: user.token)
                #expect(reply.status == .noContent)
            }
            // The indicator follows the answer (the request does not wait for Discord).
            try await server.settled()
            try #require(try await server.metric("threaddesk_typing_sent_total") == 1, "the user typing shown in Discord")
            #expect(server.emulator.counters.requestsByRoute["POST /channels/{channel_id}/typing"] == 1)
            #expect(server.emulator.threads().first { $0.id == thread }?.botTypingAt != nil)
            // The user's message ends their typing indicator, as Discord's clients show it.
            let sent = try await server.send("done typing", token: user.token)
            #expect(sent.status == .created)
            #expect(server.emulator.threads().first { $0.id == thread }?.botTypingAt == nil)
            // The bot's own typing (the user's, relayed) is not echoed back to the user: the gateway
            // delivers in order, so once the agent's later reply is on the stream, any echo would be too.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "a marker after the typing")
            _ = try await stream.next("the marker reply") { $0.name == "message.created" && ($0.json["content"] as? String) == "a marker after the typing" }
            #expect(stream.events(named: "typing").count == 1)
        }
    }

    @Test func readReceiptsMoveTheUnreadCountTheBadgeAndTheReactionInDiscord() async throws {
        try await withServer(gateway: true, { $0.live.readReceiptDelay = .milliseconds(100) }) { server in
            let (user, thread, device) = try await server.userWithThread()
            let token = user.token
            let one = try server.emulator.replyAsAgent(inThread: thread, content: "one")
            let two = try server.emulator.replyAsAgent(inThread: thread, content: "two")
            try await server.settled()
            try #require(server.apns.deliveries(to: device).count >= 2, "two pushes")
            #expect(try await server.request(.get, "/v1/unread", token: token).json["count"]?.intValue == 2)
            let otherDevice = try await Self.stream(server, token)
            defer { otherDevice.close() }

            let read = try await server.request(.post, "/v1/read", token: token, json: #"{"messageId":"\#(one.id)"}"#)
            #expect(read.status == .ok)
            #expect(read.json["count"]?.intValue == 1)
            #expect(read.json["lastReadMessageId"]?.stringValue == one.id)
            try await otherDevice.next("the read mark") { $0.name == "read" && $0.json["messageId"] as? String == one.id }
            try await otherDevice.next("the unread count") { $0.name == "unread" && $0.json["count"] as? Int == 1 }
            try await server.settled()
            try #require(server.emulator.messages(inThread: thread).first { $0.id == one.id }?.reactions == ["👀"], "the receipt on the first reply")

            // Never backwards (the user's own first message, by the id the app knows).
            let first = try #require(try await server.messages(token: token).first?["id"]?.stringValue)
            let back = try await server.request(.post, "/v1/read", token: token, json: #"{"messageId":"\#(first)"}"#)
            #expect(back.json["lastReadMessageId"]?.stringValue == one.id)

            _ = try await server.request(.post, "/v1/read", token: token, json: #"{"messageId":"\#(two.id)"}"#)
            try await server.settled()
            let messages = server.emulator.messages(inThread: thread)
            try #require(messages.first { $0.id == two.id }?.reactions == ["👀"] && messages.first { $0.id == one.id }?.reactions == [], "the receipt moved to the second reply")
            #expect(try await server.request(.get, "/v1/unread", token: token).json["count"]?.intValue == 0)

            try server.emulator.replyAsAgent(inThread: thread, content: "three")
            try await server.settled()
            try #require(server.apns.deliveries(to: device).count >= 3, "the third push")
            #expect(server.apns.deliveries(to: device).last?.aps["badge"] as? Int == 1)

            // Only messages of the user's own conversation can be marked.
            let other = try await server.userWithThread(device: String(repeating: "cd", count: 32))
            let foreign = try await server.request(.post, "/v1/read", token: other.session.token, json: #"{"messageId":"\#(two.id)"}"#)
            #expect(foreign.status == .notFound)
            #expect(foreign.errorCode == "message_not_found")
            let garbage = try await server.request(.post, "/v1/read", token: token, json: #"{"messageId":"x"}"#)
            #expect(garbage.status == .badRequest)
        }
    }

    @Test func aStreamThatStopsReadingIsDroppedAndReleased() async throws {
        try await withServer(gateway: true, {
            $0.live.writeTimeout = .milliseconds(500)
            $0.live.keepAlive = .milliseconds(100)
        }) { server in
            let (user, thread, _) = try await server.userWithThread()
            let port = try #require(server.client.port)
            // A client that sends its request and never reads a byte, with a small receive buffer.
            let socket = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 2048)
                .channelOption(ChannelOptions.autoRead, value: false)
                .connect(host: "127.0.0.1", port: port).get()
            defer { socket.close(promise: nil) }
            let head = "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n\r\n"
            try await socket.writeAndFlush(ByteBuffer(string: head)).get()
            try await server.openStreams(1)

            let text = String(repeating: "a long answer ", count: 140)
            for _ in 0..<70 { try server.emulator.replyAsAgent(inThread: thread, content: text) }
            try await server.droppedStreams(1)
            #expect(try await server.metric("threaddesk_live_streams_dropped_total") == 1)
            try await server.openStreams(0)
            // The server is not stuck: a reading client still gets the conversation.
            try await server.settled()
            try #require(try await server.request(.get, "/v1/unread", token: user.token).json["count"]?.intValue == 70, "every reply mirrored")
            let reader = try await Self.stream(server, user.token)
            defer { reader.close() }
            #expect(reader.events(named: "unread").first?.json["count"] as? Int == 70)
        }
    }

    @Test func aUserHoldsAtMostEightStreamsAndTheOldestMakesWay() async throws {
        try await withServer { server in
            let user = try await server.session()
            var streams: [EventStreamClient] = []
            for _ in 0..<9 { streams.append(try await Self.stream(server, user.token)) }
            defer { streams.forEach { $0.close() } }
            try await streams[0].ends("the oldest stream closed")
            #expect(!streams[8].ended)
            try await server.openStreams(8)
            let unauthorized = try await server.request(.get, "/v1/events", token: "not-a-token")
            #expect(unauthorized.status == .unauthorized)
        }
    }

    @Test func streamsEndCleanlyWhenTheServerShutsDown() async throws {
        try await DiscordEmulator.withRunning(configuration: .fastWindows(scale: 0.02), logger: testLogger()) { discord in
            let endpoints = await discord.endpoints()
            var configuration = ServerConfiguration(
                discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                forumChannelID: endpoints.forumChannelID, appKey: "app")
            configuration.port = 0
            configuration.quotas = .off
            // Streams that held the drain up would hold it the whole grace (less a second); the
            // shutdown below must end in half of it, which leaves a busy machine plenty.
            configuration.shutdownGrace = .seconds(60)
            let store = try makeStore(url: "sqlite://\(temporaryStorePath())", logger: testLogger())
            let (ports, portSignal) = AsyncStream.makeStream(of: Int.self)
            let app = buildApplication(configuration: configuration, store: store, logger: testLogger(), onServerRunning: { portSignal.yield($0) })
            let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: testLogger())
            let running = Task { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/session")
            request.method = .POST
            request.headers.add(name: "X-App-Key", value: "app")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: "{}"))
            let session = try await HTTPClient.shared.execute(request, timeout: .seconds(10)).body.collect(upTo: 1 << 16)
            let token = try #require(try JSON.parse(Data(buffer: session))["token"]?.stringValue)
            var streams: [EventStreamClient] = []
            for _ in 0..<3 {
                let stream = try await EventStreamClient.open(port: port, token: token)
                try await stream.next("the stream open") { $0.name == "unread" }
                streams.append(stream)
            }
            let started = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await running.value
            // Well inside the grace: the streams did not hold the drain up.
            #expect(started.duration(to: .now) < configuration.shutdownGrace / 2)
            try await EventStreamClient.allEnd(streams, "the streams ended")
            let clean = streams.allSatisfy { $0.endedCleanly }
            #expect(clean)
        }
    }

    /// A stream past the process's `LIVE_MAX_STREAMS` is answered 503 `busy` with a `Retry-After`,
    /// and the refusal is counted by its code (a 503's status alone does not tell a full process
    /// from a store away).
    @Test func aStreamPastTheProcesssLimitIsAnswered503BusyAndCountedByItsCode() async throws {
        try await withServer({ $0.live.maxStreams = 1 }) { server in
            let first = try await server.session()
            let other = try await server.session()
            let stream = try await Self.stream(server, first.token)
            defer { stream.close() }

            let refused = try await server.request(.get, "/v1/events", token: other.token)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.errorCode == "busy")
            #expect(refused.headers[.retryAfter] == "5")
            #expect(try await server.metric(#"threaddesk_http_unavailable_total{route="/v1/events",code="busy"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_http_unavailable_total{route="/v1/events",code="store_unavailable"}"#) == 0)
        }
    }
}
