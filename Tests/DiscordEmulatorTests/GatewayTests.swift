import DiscordEmulator
import DiscordREST
import HummingbirdWSClient
import Logging
import NIOWebSocket
import Synchronization
import TestSupport
import Testing

@Suite("Discord emulator gateway v10", .timeLimit(.minutes(1)))
struct GatewayTests {
    private static let logger: Logger = {
        var logger = Logger(label: "gateway-test")
        logger.logLevel = .error
        return logger
    }()

    private func withEmulator(
        _ configure: (inout DiscordEmulator.Configuration) -> Void = { _ in },
        _ body: @Sendable (DiscordEmulator, DiscordEmulator.Endpoints) async throws -> Void
    ) async throws {
        var configuration = DiscordEmulator.Configuration()
        configure(&configuration)
        try await DiscordEmulator.withRunning(configuration: configuration, logger: Self.logger) { emulator in
            try await body(emulator, await emulator.endpoints())
        }
    }

    @Test func helloIdentifyReadyGuildCreateThenSequencedDispatches() async throws {
        try await withEmulator { emulator, endpoints in
            let client = DiscordClient(
                configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: Self.logger)
            let existing = try await client.startForumThread(
                in: endpoints.forumChannelID, .init(name: "before", message: .init(content: "already here")))

            let close = try await withGateway(endpoints.gatewayURL) { gateway in
                let hello = try #require(try await gateway.receive())
                #expect(hello["op"] == 10)
                #expect(hello["d"]?["heartbeat_interval"] == 41_250)

                try await gateway.identify(token: endpoints.botToken)
                let ready = try #require(try await gateway.receive())
                #expect(ready["op"] == 0 && ready["t"] == "READY" && ready["s"] == 1)
                #expect(ready["d"]?["v"] == 10)
                #expect(ready["d"]?["user"]?["id"]?.stringValue == endpoints.botUserID)
                #expect(ready["d"]?["session_id"]?.stringValue?.isEmpty == false)
                #expect(ready["d"]?["resume_gateway_url"]?.stringValue?.hasPrefix("ws://") == true)

                let guild = try #require(try await gateway.receive())
                #expect(guild["t"] == "GUILD_CREATE" && guild["s"] == 2)
                #expect(guild["d"]?["id"]?.stringValue == endpoints.guildID)
                let threadIDs = guild["d"]?["threads"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
                #expect(threadIDs == [existing.channel.id])

                try await gateway.send(["op": 1, "d": 2])
                #expect(try await gateway.receive()?["op"] == 11)

                let thread = try await client.startForumThread(
                    in: endpoints.forumChannelID, .init(name: "new", message: .init(content: "from the app")))
                let created = try await gateway.dispatch("THREAD_CREATE")
                #expect(created["s"] == 3)
                #expect(created["d"]?["parent_id"]?.stringValue == endpoints.forumChannelID)
                #expect(created["d"]?["newly_created"] == true)
                let starter = try await gateway.dispatch("MESSAGE_CREATE")
                #expect(starter["d"]?["id"]?.stringValue == thread.channel.id)

                let reply = try emulator.replyAsAgent(inThread: thread.channel.id, content: "on it", replyingTo: thread.message.id)
                let heard = try await gateway.dispatch("MESSAGE_CREATE")
                #expect(heard["d"]?["id"]?.stringValue == reply.id)
                #expect(heard["d"]?["content"] == "on it")
                #expect(heard["d"]?["type"] == 19)
                #expect(heard["d"]?["guild_id"]?.stringValue == endpoints.guildID)
                #expect(heard["d"]?["author"]?["id"]?.stringValue == endpoints.agentUserID)

                try emulator.editMessage(reply.id, inChannel: thread.channel.id, content: "on it now")
                let updated = try await gateway.dispatch("MESSAGE_UPDATE")
                #expect(updated["d"]?["content"] == "on it now")
                #expect(updated["d"]?["edited_timestamp"]?.stringValue != nil)
                try emulator.deleteMessage(reply.id, inChannel: thread.channel.id)
                let deleted = try await gateway.dispatch("MESSAGE_DELETE")
                #expect(deleted["d"]?["id"]?.stringValue == reply.id)
                try emulator.deleteThread(thread.channel.id)
                let gone = try await gateway.dispatch("THREAD_DELETE")
                #expect(gone["d"]?["id"]?.stringValue == thread.channel.id)
                #expect(gone["d"]?["parent_id"]?.stringValue == endpoints.forumChannelID)
            }
            #expect(close?.closeCode == .normalClosure)
            #expect(emulator.counters.identifies == 1)
        }
    }

    @Test func resumeReplaysWhatWasMissedThenResumed() async throws {
        try await withEmulator { emulator, endpoints in
            let thread = try await endpoints.startThread()
            let session = Mutex<(id: String, url: String, seq: Int)?>(nil)
            _ = try? await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: endpoints.botToken)
                let ready = try await gateway.dispatch("READY")
                let guild = try await gateway.dispatch("GUILD_CREATE")
                session.withLock {
                    $0 = (ready["d"]?["session_id"]?.stringValue ?? "", ready["d"]?["resume_gateway_url"]?.stringValue ?? "",
                          guild["s"]?.intValue ?? 0)
                }
                emulator.dropGatewayConnections()
                try await gateway.drain()
            }
            let missed = try emulator.replyAsAgent(inThread: thread, content: "while you were away")
            let (sessionID, resumeURL, seq) = try #require(session.withLock { $0 })

            try await withGateway(resumeURL) { gateway in
                #expect(try await gateway.receive()?["op"] == 10)
                try await gateway.send(["op": 6, "d": ["token": .string(endpoints.botToken), "session_id": .string(sessionID), "seq": JSON(seq)]])
                let replayed = try #require(try await gateway.receive())
                #expect(replayed["t"] == "MESSAGE_CREATE")
                #expect(replayed["s"]?.intValue == seq + 1)
                #expect(replayed["d"]?["id"]?.stringValue == missed.id)
                let resumed = try #require(try await gateway.receive())
                #expect(resumed["t"] == "RESUMED")
            }
            #expect(emulator.counters.resumes == 1)
            #expect(emulator.counters.identifies == 1)
            #expect(emulator.counters.resumesOffResumeURL == 0)
        }
    }

    /// Discord: a client that closes with 1000 or 1001 ends its session (it cannot be resumed);
    /// any other code (ThreadDesk's reconnects close with 4900) keeps it resumable.
    @Test(arguments: [(UInt16(1000), false), (1001, false), (4900, true)])
    func aClientCloseOf1000Or1001EndsTheSession(code: UInt16, resumable: Bool) async throws {
        try await withEmulator { emulator, endpoints in
            let session = Mutex<(id: String, url: String, seq: Int)?>(nil)
            try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: endpoints.botToken)
                let ready = try await gateway.dispatch("READY")
                session.withLock {
                    $0 = (ready["d"]?["session_id"]?.stringValue ?? "", ready["d"]?["resume_gateway_url"]?.stringValue ?? "", ready["s"]?.intValue ?? 0)
                }
                try await gateway.close(code == 1000 ? .normalClosure : code == 1001 ? .goingAway : .unknown(code))
            }
            let (sessionID, resumeURL, seq) = try #require(session.withLock { $0 })
            if !resumable { try await emulator.waitUntil("the session ended") { $0.counters.sessionsEndedByClient == 1 } }
            try await withGateway(resumeURL) { gateway in
                #expect(try await gateway.receive()?["op"] == 10)
                try await gateway.send(["op": 6, "d": ["token": .string(endpoints.botToken), "session_id": .string(sessionID), "seq": JSON(seq)]])
                if resumable {
                    // What came after READY is replayed, then RESUMED.
                    _ = try await gateway.dispatch("RESUMED")
                    try await gateway.close(.unknown(4900))
                } else {
                    let answer = try #require(try await gateway.receive())
                    #expect(answer["op"] == 9 && answer["d"] == false, "\(answer)")
                }
            }
            #expect(emulator.counters.sessionsEndedByClient == (resumable ? 0 : 1))
            #expect(emulator.counters.resumes == (resumable ? 1 : 0))
        }
    }

    @Test func identifiesFasterThanMaxConcurrencyGetAnInvalidSession() async throws {
        // The window runs on a clock the test moves: however slow the machine, the second
        // identify comes inside it, and the window ends exactly when the test says.
        let clock = ManualClock()
        try await withEmulator({
            $0.maxConcurrency = 1
            $0.identifyConcurrencyWindow = .seconds(5)
            $0.clock = .init(clock)
        }) { emulator, endpoints in
            let rest = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: Self.logger)
            #expect(try await rest.gatewayBot().sessionStartLimit.maxConcurrency == 1)
            func identifyOnce() async throws -> JSON? {
                let answer = Mutex<JSON?>(nil)
                _ = try await withGateway(endpoints.gatewayURL) { gateway in
                    _ = try await gateway.receive()
                    try await gateway.identify(token: endpoints.botToken)
                    let first = try await gateway.receive()
                    answer.withLock { $0 = first }
                    try await gateway.close(.unknown(4900))
                }
                return answer.withLock { $0 }
            }
            #expect(try await identifyOnce()?["t"] == "READY")
            // A second identify within the window: op 9, not resumable, and no session started.
            let refused = try await identifyOnce()
            #expect(refused?["op"] == 9)
            #expect(refused?["d"] == false)
            #expect(emulator.counters.identifiesOverConcurrency == 1)
            #expect(emulator.counters.identifies == 1)
            // Still inside the window a moment before it ends.
            clock.advance(by: .milliseconds(4_999))
            #expect(try await identifyOnce()?["op"] == 9)
            #expect(emulator.counters.identifiesOverConcurrency == 2)
            clock.advance(by: .milliseconds(1))
            #expect(try await identifyOnce()?["t"] == "READY")
            #expect(emulator.counters.identifies == 2)
        }
    }

    @Test func aBadTokenClosesWith4004() async throws {
        try await withEmulator { _, endpoints in
            let close = try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: "MTIz.not.thetoken")
                try await gateway.drain()
            }
            #expect(close?.closeCode == .unknown(4004))
        }
    }

    @Test func messageContentIntentNotEnabledClosesWith4014() async throws {
        try await withEmulator({ $0.messageContentIntentEnabled = false }) { emulator, endpoints in
            let close = try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: endpoints.botToken)
                try await gateway.drain()
            }
            #expect(close?.closeCode == .unknown(4014))
            #expect(emulator.counters.identifies == 0)
        }
    }

    @Test func anUnsupportedVersionClosesWith4012() async throws {
        try await withEmulator { _, endpoints in
            let answer = try await immediateGatewayClose(endpoints.gatewayURL, query: "v=9&encoding=json")
            #expect(answer.status.hasPrefix("HTTP/1.1 101"))
            #expect(answer.code == 4012)
        }
    }

    @Test func reconnectAndInvalidSessionReachTheClient() async throws {
        try await withEmulator { emulator, endpoints in
            let sessionID = Mutex("")
            try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: endpoints.botToken)
                let ready = try await gateway.dispatch("READY")
                sessionID.withLock { $0 = ready["d"]?["session_id"]?.stringValue ?? "" }
                _ = try await gateway.dispatch("GUILD_CREATE")
                emulator.sendGatewayReconnect()
                #expect(try await gateway.receive()?["op"] == 7)
                // Discord expects the client to hang up and resume: with a code other than 1000
                // or 1001, which would end the session.
                try await gateway.close(.unknown(4900))
            }
            try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.send(["op": 6, "d": ["token": .string(endpoints.botToken), "session_id": .string(sessionID.withLock { $0 }), "seq": 2]])
                #expect(try await gateway.receive()?["t"] == "RESUMED")
                emulator.sendInvalidSession(resumable: false)
                let invalid = try #require(try await gateway.receive())
                #expect(invalid["op"] == 9 && invalid["d"] == false)
            }
            // A session invalidated with `d: false` cannot be resumed.
            try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.send(["op": 6, "d": ["token": .string(endpoints.botToken), "session_id": .string(sessionID.withLock { $0 }), "seq": 2]])
                let invalid = try #require(try await gateway.receive())
                #expect(invalid["op"] == 9 && invalid["d"] == false)
            }
            #expect(emulator.counters.resumes == 1)
            #expect(emulator.counters.resumesRejected == 1)
            #expect(emulator.counters.resumesOffResumeURL == 1)
        }
    }

    @Test func withoutAcksAHeartbeatGoesUnanswered() async throws {
        try await withEmulator { emulator, endpoints in
            let thread = try await endpoints.startThread()
            try await withGateway(endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: endpoints.botToken)
                _ = try await gateway.dispatch("GUILD_CREATE")
                emulator.setHeartbeatAcks(false)
                try await gateway.send(["op": 1, "d": 2])
                try await emulator.waitUntil("the heartbeat received") { $0.counters.heartbeats > 0 }
                let reply = try emulator.replyAsAgent(inThread: thread, content: "ping")
                // The next frame after the heartbeat is the dispatch: no ACK came in between.
                let next = try #require(try await gateway.receive())
                #expect(next["op"] == 0 && next["d"]?["id"]?.stringValue == reply.id)
            }
        }
    }
}

extension DiscordEmulator.Endpoints {
    /// A support thread to talk in, created over REST as ThreadDesk creates it.
    fileprivate func startThread() async throws -> String {
        var logger = Logger(label: "gateway-test")
        logger.logLevel = .error
        let client = DiscordClient(configuration: .init(baseURL: restURL, token: botToken), logger: logger)
        return try await client.startForumThread(in: forumChannelID, .init(name: "test thread", message: .init(content: "hello"))).channel.id
    }
}
