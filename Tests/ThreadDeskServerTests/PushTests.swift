import APNsEmulator
import AsyncHTTPClient
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Replies become pushes", .timeLimit(.minutes(2)))
struct PushTests {
    static func alert(_ delivery: APNsEmulator.Delivery) -> [String: Any] { delivery.aps["alert"] as? [String: Any] ?? [:] }

    static func messageID(_ delivery: APNsEmulator.Delivery) -> String? {
        ((try? JSONSerialization.jsonObject(with: delivery.payload)) as? [String: Any])?["messageId"] as? String
    }

    @Test func aSupportReplyReachesTheDeviceOnce() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, device) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "We shipped a fix in 1.4.1")
            try await server.settled()
            try #require(server.apns.deliveries.count >= 1, "a push")
            let delivery = try #require(server.apns.deliveries(to: device).first)
            #expect(Self.alert(delivery)["title"] as? String == "New reply")
            #expect(Self.alert(delivery)["body"] as? String == "We shipped a fix in 1.4.1")
            #expect(delivery.aps["thread-id"] as? String == user.userId)
            #expect(delivery.aps["badge"] as? Int == 1)
            #expect(delivery.aps["category"] as? String == "SUPPORT_REPLY")
            #expect(Self.messageID(delivery) == reply.id)
            #expect(delivery.pushType == "alert" && delivery.priority == 10)

            // Replays — the same event again, and a catch-up over the same messages — push nothing.
            // Both forwards return once handled (the gap after a catch-up that began after it).
            let again = try #require(try await server.discordClient.messages(in: thread, after: "0", limit: 100).first { $0.id == reply.id })
            let events = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.messageCreated(again), .gap]]), as: UTF8.self)
            #expect(try await server.forward(events).status == .ok)
            #expect(try await server.metric("threaddesk_catch_ups_total") >= 1)
            // A later reply is the marker that nothing else was pushed before it.
            let marker = try server.emulator.replyAsAgent(inThread: thread, content: "marker")
            try await server.settled()
            try #require(server.apns.deliveries.count >= 2, "the marker's push")
            #expect(server.apns.deliveries.map(Self.messageID) == [reply.id, marker.id])
        }
    }

    @Test func notesTheUsersOwnMessagesAndUnknownThreadsNeverPush() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            try server.emulator.postNote(inThread: thread, content: "internal")
            try server.emulator.replyAsAgent(inThread: thread, content: "!HiddenMessage also internal")
            try server.emulator.replyAsAgent(inThread: thread, content: "🥷 what Discord's client sends for :ninja:")
            _ = try await server.send("another from the user", token: user.token)
            // A forum thread nobody in ThreadDesk owns.
            let stranger = try await DiscordClient(
                configuration: .init(baseURL: server.discord.restURL, token: server.discord.botToken), logger: testLogger()
            ).startForumThread(in: server.discord.forumChannelID, .init(name: "manual", message: .init(content: "made by hand")))
            try server.emulator.replyAsAgent(inThread: stranger.channel.id, content: "answer in a thread no user owns")
            // A marker reply that does push, so the test knows everything before it was handled.
            let marker = try server.emulator.replyAsAgent(inThread: thread, content: "visible")
            try await server.settled()
            try #require(!server.apns.deliveries.isEmpty, "the marker reply's push")
            #expect(server.apns.deliveries.map(Self.messageID) == [marker.id])
        }
    }

    @Test func repliesAndAttachmentOnlyMessagesPush() async throws {
        try await withServer(gateway: true) { server in
            let (_, thread, device) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "replying", replyingTo: thread)
            let file = try server.emulator.replyAsAgent(
                inThread: thread, content: "", attachments: [.init(filename: "steps.pdf", contentType: "application/pdf", data: Data([1, 2]))])
            try await server.settled()
            try #require(server.apns.deliveries.count >= 2, "two pushes")
            let deliveries = server.apns.deliveries(to: device)
            // In the order the gateway gave them, unless one came through a gap's reconciliation.
            #expect(Set(deliveries.map(Self.messageID)) == [reply.id, file.id])
            let pushedFile = try #require(deliveries.first { Self.messageID($0) == file.id })
            #expect(Self.alert(pushedFile)["body"] as? String == "📎 steps.pdf")
            // The badge is the unread count when the push leaves: the last one counts both.
            #expect(deliveries.last?.aps["badge"] as? Int == 2)
        }
    }

    @Test func readingResetsTheBadge() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, device) = try await server.userWithThread()
            try server.emulator.replyAsAgent(inThread: thread, content: "one")
            let two = try server.emulator.replyAsAgent(inThread: thread, content: "two")
            try await server.settled()
            try #require(server.apns.deliveries.count >= 2, "two pushes")
            // Reading the conversation marks nothing; the app says what the user has read.
            _ = try await server.messages(token: user.token)
            #expect(try await server.request(.get, "/v1/unread", token: user.token).json["count"]?.intValue == 2)
            let read = try await server.request(.post, "/v1/read", token: user.token, json: #"{"messageId":"\#(two.id)"}"#)
            #expect(read.json["count"]?.intValue == 0)
            try server.emulator.replyAsAgent(inThread: thread, content: "three")
            try await server.settled()
            try #require(server.apns.deliveries.count >= 3, "the third push")
            let badges = server.apns.deliveries(to: device).map { $0.aps["badge"] as? Int }
            #expect(badges[1] == 2)
            #expect(badges[2] == 1)
        }
    }

    @Test func anUnregisteredTokenIsRemovedAndNotUsedAgain() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, device) = try await server.userWithThread()
            server.apns.script(device, [.unregistered(timestamp: 1_800_000_000_000)])
            let first = try server.emulator.replyAsAgent(inThread: thread, content: "you will not see this")
            try await server.settled()
            try #require(server.apns.counters.requests >= 1, "a request to APNs")
            try await server.settled()
            try #require((try? await server.store.user(UserID(user.userId)!))?.pushToken == nil, "the push token removed")
            #expect(try await server.store.user(UserID(user.userId)!)?.pushToken == nil)
            let requests = server.apns.counters.requests
            let second = try server.emulator.replyAsAgent(inThread: thread, content: "nor this")
            // Mirrored with nothing to push, and no request to APNs.
            try await server.settled()
            try #require(try await server.mirrored(second.id) != nil, "the second reply mirrored")
            #expect(try await server.pushState(of: second.id) == PushState.none)
            #expect(try await server.pushState(of: first.id) == .abandoned)
            #expect(server.apns.counters.requests == requests)
            #expect(server.apns.deliveries.isEmpty)
        }
    }

    @Test func aPushThatFailsStaysPendingAndIsRetriedUntilItGoesOutOnce() async throws {
        // On a clock the test drives: the push's backoffs (60 s and up) pass when the test moves
        // the clock past them. (`settled(driving:)` also passes whatever short sleeps run
        // meanwhile, the gateway's heartbeats among them, so it may pass one more backoff now and
        // then: each move is at least one more attempt, not exactly one.)
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock), {
            $0.push.retryBase = .seconds(60)
            $0.push.retryCap = .seconds(600)
            $0.apns?.budget = .seconds(2)
        }) { server in
            let (_, thread, device) = try await server.userWithThread()
            server.apns.setPermanentOutcome(.reject(status: 503, reason: "ServiceUnavailable"), for: device)
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "during an APNs outage")
            try await server.settled(driving: clock)
            var failed = try await server.metric(#"threaddesk_pushes_total{outcome="unavailable"}"#)
            #expect(failed >= 1)
            for _ in 0..<2 {
                clock.advance(by: .seconds(600))
                try await server.settled(driving: clock)
                let now = try await server.metric(#"threaddesk_pushes_total{outcome="unavailable"}"#)
                #expect(now > failed)
                failed = now
                guard case .pending(let attempts, _)? = try await server.pushState(of: reply.id) else {
                    Issue.record("the push is not pending")
                    return
                }
                #expect(Double(attempts) == failed)
            }
            #expect(server.apns.deliveries.isEmpty)
            server.apns.setPermanentOutcome(nil, for: device)
            clock.advance(by: .seconds(600))
            try await server.settled(driving: clock)
            #expect(try await server.pushState(of: reply.id) == .sent)
            #expect(server.apns.deliveries.map(Self.messageID) == [reply.id])
        }
    }

    @Test func aGapIsReconciledAndTheMissedReplyPushedOnce() async throws {
        try await withServer { server in
            let (_, thread, device) = try await server.userWithThread()
            let missed = try server.emulator.replyAsAgent(inThread: thread, content: "missed by the gateway")
            let gap = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.gap]]), as: UTF8.self)
            // The server's own run at start (a restart is a gap) done first, whenever the machine
            // lets it run: it may or may not have found the thread already.
            try await server.settled()
            try #require(try await server.metric("threaddesk_catch_ups_total") >= 1, "the run at start")
            let listings = { server.emulator.counters.requests("GET", "/guilds/{guild_id}/threads/active") }
            let before = listings()
            // A slow Discord keeps the first reconciliation running while the second gap arrives.
            server.emulator.setLatency(.milliseconds(300))
            #expect(try await server.forward(gap).status == .ok)
            try await server.emulator.waitUntil("the first reconciliation under way") { _ in listings() >= before + 1 }
            #expect(try await server.forward(gap).status == .ok)
            // The second gap came during the first run: it gets a run of its own, which lists
            // the forum's threads again.
            try await server.settled()
            try #require(listings() >= before + 2, "two reconciliations")
            server.emulator.setLatency(.zero)
            try await server.settled()
            try #require(try await server.pushState(of: missed.id) == .sent, "the missed reply pushed")
            #expect(server.apns.deliveries(to: device).map(Self.messageID) == [missed.id])
        }
    }

    @Test func theInternalRouteNeedsTheSecret() async throws {
        try await withServer { server in
            let body = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.gap]]), as: UTF8.self)
            let anonymous = try await server.request(.post, "/internal/gateway/events", json: body)
            #expect(anonymous.status == .unauthorized)
            let wrong = try await server.request(.post, "/internal/gateway/events", headers: [.authorization: "Bearer nope"], json: body)
            #expect(wrong.status == .unauthorized)
            // What is not an event batch at all is refused; an event this server does not know is
            // skipped and counted (a newer daemon), never a 400 the daemon would retry forever.
            #expect(try await server.forward(#"{"nonsense":[]}"#).status == .badRequest)
            #expect(try await server.forward(#"{"events":[{"nonsense":{}}]}"#).json == ["handled": 0, "skipped": 1])
            #expect(try await server.forward(body).json == ["handled": 1, "skipped": 0])
        }
    }

    @Test func theInternalRouteAndMetricsCanLiveOnAPrivateListener() async throws {
        try await withServer({ $0.internalPort = 0 }) { server in
            let body = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.gap]]), as: UTF8.self)
            // The public listener no longer serves either.
            #expect(try await server.request(.get, "/metrics").status == .notFound)
            #expect(try await server.forward(body).status == .notFound)
            #expect(try await server.request(.get, "/health").status == .ok)

            let base = "http://127.0.0.1:\(try await server.internalPort.value())"
            var post = HTTPClientRequest(url: base + "/internal/gateway/events")
            post.method = .POST
            post.headers.add(name: "Authorization", value: "Bearer test-gateway-secret")
            post.headers.add(name: "Content-Type", value: "application/json")
            post.body = .bytes(ByteBuffer(string: body))
            let forwarded = try await HTTPClient.shared.execute(post, timeout: .seconds(10))
            #expect(forwarded.status == .ok)
            #expect(try JSON.parse(Data(buffer: try await forwarded.body.collect(upTo: 1 << 16))) == ["handled": 1, "skipped": 0])
            #expect(try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/metrics"), timeout: .seconds(10)).status == .unauthorized)
            var scrape = HTTPClientRequest(url: base + "/metrics")
            scrape.headers.add(name: "Authorization", value: "Bearer \(Harness.metricsToken)")
            let metrics = try await HTTPClient.shared.execute(scrape, timeout: .seconds(10))
            #expect(metrics.status == .ok)
            let text = String(buffer: try await metrics.body.collect(upTo: 1 << 22))
            #expect(text.contains("threaddesk_discord_invalid_requests"))
        }
    }
}
