import APNsEmulator
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

@Suite("Pushes survive a misbehaving gateway", .timeLimit(.minutes(3)))
struct GatewayChaosTests {
    @Test func aThousandRepliesAcrossAHundredUsersGiveExactlyAThousandPushes() async throws {
        var emulator = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
        emulator.heartbeatInterval = .milliseconds(200)
        try await withServer(emulator: emulator, gateway: true, {
            $0.gatewayBackoffBase = .milliseconds(50)
            $0.mirror.reconcileInterval = .seconds(3)
        }) { server in
            // A hundred users, each with a device and a thread; eight at a time, as many as the
            // test client keeps connections (more would wait in its pool, whose wait has a limit
            // a loaded machine can pass).
            let users = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var made: [Int: String] = [:]
                for index in 0..<100 {
                    if index >= 8, let (done, thread) = try await group.next() { made[done] = thread }
                    group.addTask {
                        let device = String(format: "%064x", index + 1)
                        return (index, try await server.userWithThread(device: device).thread)
                    }
                }
                for try await (done, thread) in group { made[done] = thread }
                return made
            }
            try await server.settled()
            try #require(server.emulator.counters.identifies >= 1, "the gateway to identify")

            let faults: [@Sendable (DiscordEmulator) -> Void] = [
                { $0.dropGatewayConnections() },
                { $0.sendGatewayReconnect() },
                { $0.sendInvalidSession(resumable: true) },
                { $0.setHeartbeatAcks(false) },
                { $0.setHeartbeatAcks(true); $0.sendInvalidSession(resumable: false) },
                { $0.closeGatewayConnections(code: 4009, reason: "Session timed out.") },
                { $0.dropGatewayConnections() },
                { $0.setHeartbeatAcks(false) },
                { $0.setHeartbeatAcks(true); $0.sendGatewayReconnect() },
                { $0.closeGatewayConnections(code: 1011, reason: "Restarting.") },
            ]
            var replies: [String] = []
            for index in 0..<1000 {
                if index % 100 == 50 { faults[index / 100](server.emulator) }
                replies.append(try server.emulator.replyAsAgent(inThread: users[index % 100]!, content: "reply \(index)").id)
                // Paced: every ten replies, the server's gateway takes in what was sent before more come.
                if index % 10 == 9 { try await server.takenIn() }
            }
            server.emulator.setHeartbeatAcks(true)

            try await server.apns.waitUntil("1,000 pushes") { $0.deliveries.count >= 1000 }
            // One more catch-up over everything: still nothing twice.
            let gap = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.gap]]), as: UTF8.self)
            #expect(try await server.forward(gap).status == .ok)

            let pushed = server.apns.deliveries.compactMap(PushTests.messageID)
            #expect(pushed.count == 1000)
            #expect(Set(pushed) == Set(replies))
            for index in 0..<100 {
                #expect(server.apns.deliveries(to: String(format: "%064x", index + 1)).count == 10)
            }
            // The faults really happened: sessions were resumed and started anew. (Faults that land
            // in the 1–5 s pause after a non-resumable op 9 find no connection to break.)
            // The pushes may all be out before the client's pause after the non-resumable op 9
            // ends: its new session comes when it comes.
            try await server.emulator.waitUntil("the faults' new sessions") { emulator in
                let counters = emulator.counters
                return counters.resumes >= 3 && counters.identifies >= 2 && counters.gatewayConnections >= 6
            }
            #expect(server.apns.counters.connections == 1)
        }
    }
}

@Suite("serve --gateway when the gateway stops for good")
struct FatalGatewayTests {
    @Test func theAPIKeepsServingAndReadySaysWhy() async throws {
        try await withServer(gateway: true) { server in
            let (user, _, _) = try await server.userWithThread()
            try await server.settled()
            try #require(server.emulator.counters.identifies >= 1, "the gateway up")
            #expect(try await server.request(.get, "/ready").status == .ok)
            // Discord closes with 4014: nothing a reconnect can fix.
            server.emulator.closeGatewayConnections(code: 4014, reason: "Disallowed intent(s).")
            var ready: Harness.Reply?
            try await eventually("/ready reporting the gateway down") {
                ready = try await server.request(.get, "/ready")
                return ready?.status == .serviceUnavailable
            }
            #expect(ready?.errorCode == "gateway_stopped")
            #expect(ready?.json["error"]?["message"]?.stringValue?.contains("4014") == true)
            // The API still takes messages and answers reads (over REST now: the feed is not live).
            let sent = try await server.send("still works", token: user.token)
            #expect(sent.status == .created)
            #expect(try await server.messages(token: user.token).contains { $0["content"]?.stringValue == "still works" })
            #expect(try await server.request(.get, "/health").status == .ok)
        }
    }
}

@Suite("serve --gateway has one Discord client")
struct SharedDiscordClientTests {
    @Test func theGatewaysRESTCallsGoThroughTheServersClient() async throws {
        try await withServer(gateway: true) { server in
            try await server.settled()
            try #require(server.emulator.counters.identifies >= 1, "the gateway up")
            // The server's client records every call it makes; the gateway's GET /gateway/bot is among them.
            let series = #"threaddesk_discord_requests_total{route="GET /gateway/bot",status="200"}"#
            #expect(try await server.metric(series) >= 1)
            #expect(server.emulator.counters.requests("GET", "/gateway/bot") == Int(try await server.metric(series)))
        }
    }
}

@Suite("The daemon → server event contract")
struct GatewayEventContractTests {
    @Test func versionOneTheOldShapeAndUnknownTypesAreAllTakenWithoutA400() async throws {
        try await withServer(gateway: false) { server in
            let (user, thread, _) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "from a daemon")
            let message = try await server.discordClient.message(reply.id, in: thread)
            let encoded = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
            // Version 1, as this daemon sends it, with an event type from a newer daemon beside it.
            let batch = #"{"version":1,"events":[{"type":"message.created","message":\#(encoded)},{"type":"poll.created","poll":{}},{"type":"alive"}]}"#
            let answer = try await server.forward(batch)
            #expect(answer.status == .ok)
            #expect(answer.json["handled"]?.intValue == 2 && answer.json["skipped"]?.intValue == 1)
            #expect(try await server.metric("threaddesk_gateway_events_skipped_total") == 1)
            try await server.settled()
            try #require(try await server.messages(token: user.token).contains { $0["id"]?.stringValue == reply.id }, "the reply in the user's conversation")
            // A daemon from before version 1 (Swift's synthesized enum shape) is still understood.
            let old = #"{"events":[{"messageDeleted":{"channelID":"\#(thread)","messageID":"\#(reply.id)"}},{"gap":{}}]}"#
            let oldAnswer = try await server.forward(old)
            #expect(oldAnswer.status == .ok && oldAnswer.json["handled"]?.intValue == 2 && oldAnswer.json["skipped"]?.intValue == 0)
            try await server.settled()
            try #require(try await !server.messages(token: user.token).contains { $0["id"]?.stringValue == reply.id }, "the deletion from the old daemon")
        }
    }

    @Test func everyEventSurvivesTheWire() async throws {
        try await withServer(gateway: false) { server in
            let (_, thread, _) = try await server.userWithThread()
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "on the wire")
            let message = try await server.discordClient.message(reply.id, in: thread)
            let events: [ForumEvent] = [
                .messageCreated(message), .messageUpdated(message), .messageChanged(channelID: "4", messageID: "5"),
                .messageDeleted(channelID: "4", messageID: "5"), .messagesDeleted(channelID: "4", messageIDs: ["5", "6"]),
                .threadUpdated(threadID: "4", archived: true, locked: false),
                .threadUpdated(threadID: "4", archived: false, locked: false, appliedTags: ["7", "8"]), .threadDeleted(threadID: "4"),
                .typing(channelID: "4", userID: "3"), .gap, .alive,
            ]
            let decoded = try JSONDecoder().decode(ForumEventBatch.self, from: try JSONEncoder().encode(ForumEventBatch(events: events)))
            #expect(decoded.events == events && decoded.version == ForumEventBatch.currentVersion && decoded.skipped == 0)
        }
    }
}
