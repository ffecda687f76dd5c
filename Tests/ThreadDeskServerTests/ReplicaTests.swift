import APNsEmulator
import AsyncHTTPClient
import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import Synchronization
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Two replicas on one PostgreSQL", .enabled(if: postgresIsAvailable), .timeLimit(.minutes(2)))
struct ReplicaTests {
    /// A client with a connection for every request in flight: the 40 concurrent sends wait in
    /// the servers (what the test is about), not in a client's connection pool.
    struct Client: Sendable {
        let base: String
        let http: HTTPClient
        /// The replica's background work, when the test tracks it (`settled()`).
        let work: BackgroundWork?

        init(port: Int, http: HTTPClient, work: BackgroundWork? = nil) {
            base = "http://127.0.0.1:\(port)"
            self.http = http
            self.work = work
        }

        /// Returns once this replica's background work is done (the messages it accepted delivered).
        func settled() async throws {
            try await #require(work).settled()
        }

        /// For the replica that holds the gateway: returns once it has taken in every event the
        /// emulator dispatched to it and its work is done, again while that work made Discord
        /// dispatch more (as `Harness.settled()` does).
        func caughtUp(with discord: DiscordEmulator) async throws {
            let work = try #require(work)
            while true {
                let dispatched = discord.gatewayPositions
                try await work.gatewayCaughtUp(dispatched)
                try await work.settled()
                if discord.gatewayPositions == dispatched { return }
            }
        }

        func call(_ method: HTTPRequest.Method, _ path: String, headers: HTTPFields = [:], json: String? = nil) async throws
            -> (status: HTTPResponse.Status, body: Data)
        {
            var request = HTTPClientRequest(url: base + path)
            request.method = .init(rawValue: method.rawValue)
            for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
            if let json {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: json))
            }
            let response = try await http.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (HTTPResponse.Status(code: Int(response.status.code)), Data(buffer: body))
        }
    }

    /// The gateway feeds replica A; a FAQ post created, edited and deleted reaches B's suggestions
    /// through PostgreSQL (B reads the post again), not only at B's next full read.
    @Test func aFAQChangeHeardByOneReplicaReachesTheOther() async throws {
        try await withReplicas(gatewayOnA: true, faq: true) { a, b, discord, _, _, _ in
            let opened = try await b.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
            let token = try #require(try JSON.parse(opened.body)["token"]?.stringValue)
            func titles(_ client: Client, _ query: String) async throws -> [String] {
                let reply = try await client.call(.get, "/v1/suggestions?q=\(query)", headers: [.authorization: "Bearer \(token)"])
                guard reply.status == .ok else { return ["HTTP \(reply.status.code)"] }
                return (try JSON.parse(reply.body)["suggestions"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue }
            }
            let post = try discord.postFAQ(title: "Reset the router", answer: "Hold the button for ten seconds.")
            try await eventually("B knows the post") { try await titles(b, "router") == ["Reset the router"] }
            let reads = discord.counters.requests("GET", "/channels/{channel_id}/threads/archived/public")
            try discord.editMessage(post, inChannel: post, content: "Unplug it for a minute.\nkeywords: modem")
            try await eventually("A's edit on B") { try await titles(b, "modem") == ["Reset the router"] }
            try discord.deleteThread(post)
            try await eventually("A's delete on B") { try await titles(b, "router").isEmpty }
            // Word of the change, not a full read of the forum, brought it.
            #expect(discord.counters.requests("GET", "/channels/{channel_id}/threads/archived/public") == reads)
            #expect(try await titles(a, "router").isEmpty)

            // B judges the author too (REST's messages carry no roles: B reads them): a helper who
            // lost the role that let them use the desk edits their post, and it is no answer on B.
            let agents = discord.createRole(named: "Agents", permissions: 1 << 34)
            let helper = try discord.addMember(named: "helper", roles: [agents])
            let tv = try discord.postFAQ(title: "Pair the TV", answer: "Open Settings.", as: helper)
            try await eventually("B knows the helper's post") { try await titles(b, "pair") == ["Pair the TV"] }
            try discord.setRoles(of: helper, to: [])
            try discord.editMessage(tv, inChannel: tv, content: "Open Settings, then Pair.", as: helper)
            try await eventually("the post no answer on B") { try await titles(b, "pair").isEmpty }
            #expect(try await titles(a, "pair").isEmpty)
        }
    }

    @Test func concurrentFirstMessagesRepliesAndRetriesAcrossReplicasHappenOnce() async throws {
        try await withReplicas { a, b, discord, endpoints, apns, url in
            try await scenario(a, b, discord: discord, endpoints: endpoints, apns: apns, url: url)
        }
    }

    /// Two servers on one fresh schema; with `gatewayOnA` replica A also holds the Discord gateway.
    private func withReplicas(
        gatewayOnA: Bool = false, faq: Bool = false, emulator: DiscordEmulator.Configuration = .fastWindows(scale: 0.02),
        adjust: @Sendable (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (Client, Client, DiscordEmulator, DiscordEmulator.Endpoints, APNsEmulator, String) async throws -> Void
    ) async throws {
        try await withFreshPostgresSchema { url in
            try await APNsEmulator.withRunning(logger: testLogger()) { apns in
                try await DiscordEmulator.withRunning(configuration: emulator, logger: testLogger()) { discord in
                    let endpoints = await discord.endpoints()
                    let credentials = await apns.credentials()
                    var configuration = ServerConfiguration(
                        discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                        forumChannelID: endpoints.forumChannelID, appKey: "app")
                    configuration.port = 0
                    configuration.storeURL = url
                    configuration.gatewaySecret = "secret"
                    configuration.quotas = .off
                    // 40 sends of one user wait for each other across both replicas; on a loaded
                    // machine the last waits longer than a real client's request would be allowed.
                    configuration.requestTimeout = .seconds(60)
                    var settings = APNsSettings(keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
                    settings.url = credentials.url
                    settings.caCertificatePEM = credentials.caCertificatePEM
                    configuration.apns = settings
                    if faq { configuration.faqChannelID = endpoints.faqChannelID }
                    adjust(&configuration)
                    let (workA, workB) = (BackgroundWork(), BackgroundWork())
                    let replicaA = buildApplication(
                        configuration: configuration, store: try makeStore(url: url, logger: testLogger()), inProcessGateway: gatewayOnA,
                        work: workA, logger: testLogger())
                    let replicaB = buildApplication(
                        configuration: configuration, store: try makeStore(url: url, logger: testLogger()), work: workB, logger: testLogger())
                    var pool = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(60)))
                    pool.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 128
                    try await withOwnHTTPClient(pool) { http in
                        try await replicaA.test(.live) { a in
                            try await replicaB.test(.live) { b in
                                try await body(
                                    Client(port: try #require(a.port), http: http, work: workA),
                                    Client(port: try #require(b.port), http: http, work: workB), discord, endpoints, apns, url)
                            }
                        }
                    }
                }
            }
        }
    }

    /// Discord's global limit is per bot: each replica takes its configured share, so two of
    /// them at full load together send no more than Discord allows.
    @Test func twoReplicasTogetherStayUnderTheBotsGlobalLimit() async throws {
        var emulator = DiscordEmulator.Configuration()
        // Only the global limit is in play here: 50 per window, as Discord counts it, in a window
        // of 5 s instead of Discord's 1 (the replicas' 25 each too), so both replicas' bursts
        // overlap in one window however slow the machine is.
        emulator.threadCreateLimit = .init(limit: 10_000, window: .seconds(1))
        emulator.defaultRouteLimit = .init(limit: 10_000, window: .seconds(1))
        emulator.globalLimit = .init(limit: 50, window: .seconds(5))
        try await withReplicas(emulator: emulator, adjust: {
            $0.discordGlobalLimit = 25
            $0.discordGlobalWindow = .seconds(5)
            $0.discordBudget = .seconds(60)
        }) { a, b, discord, _, _, _ in
            // Each first message makes a thread: two Discord calls or more, 30 or more per replica at
            // once against a share of 25 per second. (Not more users than the replica's 20 database
            // connections: a send holds one while it waits for Discord.)
            let perReplica = 15
            let tokens = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<(2 * perReplica + 2) {
                    group.addTask {
                        let opened = try await (index.isMultiple(of: 2) ? a : b).call(
                            .post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
                        return (index, try #require(try JSON.parse(opened.body)["token"]?.stringValue))
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            // A thread on each replica first: each learns the forum's bucket (its first call waits
            // for a shared turn a second apart, see the test below) before the burst.
            for index in [2 * perReplica, 2 * perReplica + 1] {
                let headers: HTTPFields = [.authorization: "Bearer \(tokens[index]!)", .init("Idempotency-Key")!: "first"]
                #expect(try await (index.isMultiple(of: 2) ? a : b).call(.post, "/v1/messages", headers: headers, json: #"{"content":"hello"}"#).status == .created)
                try await settled(a, b)
            }
            let answers = try await withThrowingTaskGroup(of: (status: HTTPResponse.Status, body: Data).self) { group in
                for (index, token) in tokens where index < 2 * perReplica {
                    group.addTask {
                        let headers: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: "first"]
                        return try await (index.isMultiple(of: 2) ? a : b).call(.post, "/v1/messages", headers: headers, json: #"{"content":"hello"}"#)
                    }
                }
                return try await group.reduce(into: [(status: HTTPResponse.Status, body: Data)]()) { $0.append($1) }
            }
            #expect(answers.filter { $0.status != .created }.map { String(decoding: $0.body, as: UTF8.self) } == [])
            try await settled(a, b)
            #expect(discord.threads().count == 2 * perReplica + 2)
            #expect(discord.counters.rateLimited == 0)
            // Both replicas were sending in the same second beyond one share: each alone wanted more.
            #expect(discord.counters.busiestGlobalWindow > 25)
            #expect(discord.counters.busiestGlobalWindow <= 50)
        }
    }

    /// The forum's thread-create bucket is the bot's, not a replica's: two replicas making threads
    /// at once take their turns through the store, at the pace Discord's headers gave, and Discord
    /// never answers 429. (Each replica alone learns the bucket from the headers; without the
    /// shared turns both spend the same remaining slots.)
    @Test func twoReplicasMakingThreadsAtOnceShareTheForumsBucket() async throws {
        var emulator = DiscordEmulator.Configuration()
        // Only the thread-create bucket is in play: 5 new threads per 2 s (shared turns: five in
        // the first second of a window, the next window 3 s after the last opened; a request may
        // reach Discord up to 1 s after its turn, however busy this machine, and the five of any
        // window still fit).
        emulator.threadCreateLimit = .init(limit: 5, window: .seconds(2))
        emulator.defaultRouteLimit = .init(limit: 10_000, window: .seconds(1))
        emulator.globalLimit = .init(limit: 10_000, window: .seconds(1))
        try await withReplicas(emulator: emulator, adjust: {
            $0.discordGlobalLimit = 10_000
            $0.discordBudget = .seconds(40)
            $0.discordSharedTurnLateness = .seconds(1)
        }) { a, b, discord, _, _, _ in
            let perReplica = 7
            let tokens = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<(2 * perReplica) {
                    group.addTask {
                        let opened = try await (index.isMultiple(of: 2) ? a : b).call(
                            .post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
                        return (index, try #require(try JSON.parse(opened.body)["token"]?.stringValue))
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            // One thread on each replica first, so both know the bucket from Discord's headers.
            for index in [0, 1] {
                let headers: HTTPFields = [.authorization: "Bearer \(tokens[index]!)", .init("Idempotency-Key")!: "first"]
                let first = try await (index.isMultiple(of: 2) ? a : b).call(.post, "/v1/messages", headers: headers, json: #"{"content":"hello"}"#)
                #expect(first.status == .created)
                try await settled(a, b)
            }
            let answers = try await withThrowingTaskGroup(of: (status: HTTPResponse.Status, body: Data).self) { group in
                for (index, token) in tokens where index > 1 {
                    group.addTask {
                        let headers: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: "first"]
                        return try await (index.isMultiple(of: 2) ? a : b).call(.post, "/v1/messages", headers: headers, json: #"{"content":"hello"}"#)
                    }
                }
                return try await group.reduce(into: [(status: HTTPResponse.Status, body: Data)]()) { $0.append($1) }
            }
            #expect(answers.filter { $0.status != .created }.map { String(decoding: $0.body, as: UTF8.self) } == [])
            try await settled(a, b)
            #expect(discord.threads().count == 2 * perReplica)
            #expect(discord.counters.rateLimited == 0)
        }
    }

    /// A send never waits on Discord (the outbox takes it), and a delivery holds no database
    /// connection across its Discord call: more sends than a pool holds, with Discord slower than a
    /// request waits for a connection, are all accepted, and reads and sessions go on meanwhile.
    @Test func sendsWaitingOnASlowDiscordLeaveTheDatabaseToEveryoneElse() async throws {
        try await withReplicas(gatewayOnA: true, adjust: { $0.discordBudget = .seconds(40) }) { a, _, discord, _, _, _ in
            let appKey: HTTPFields = [.init("X-App-Key")!: "app"]
            func send(_ token: String, _ text: String) async throws -> HTTPResponse.Status {
                let headers: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: text]
                return try await a.call(.post, "/v1/messages", headers: headers, json: #"{"content":"\#(text)"}"#).status
            }
            // Users with a thread each, so a send is one Discord call; the reader's conversation
            // is in the mirror (the gateway is live on A), so reading it asks Discord nothing.
            let users = PostgresStore.poolSize + 5
            var tokens: [String] = []
            for _ in 0..<users {
                let opened = try await a.call(.post, "/v1/session", headers: appKey, json: "{}")
                let token = try #require(try JSON.parse(opened.body)["token"]?.stringValue)
                #expect(try await send(token, "hello") == .created)
                tokens.append(token)
            }
            let reader = tokens.removeLast()
            try await a.caughtUp(with: discord)
            let page = try await a.call(.get, "/v1/messages", headers: [.authorization: "Bearer \(reader)"])
            let listed = page.status == .ok ? try JSON.parse(page.body)["messages"]?.arrayValue?.count : nil
            try #require(listed == 1, "the reader's message in the mirror")

            // Discord now answers more slowly than a request waits for a database connection.
            discord.setLatency(.seconds(8))
            final class Answers: Sendable { let statuses = Mutex<[HTTPResponse.Status]>([]) }
            let answers = Answers()
            let sends = Task { [tokens] in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for token in tokens {
                        group.addTask {
                            let status = try await send(token, "slow")
                            answers.statuses.withLock { $0.append(status) }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // Every send is accepted while Discord is slow; the deliveries wait on Discord meanwhile.
            try await sends.value
            let read = try await a.call(.get, "/v1/messages", headers: [.authorization: "Bearer \(reader)"])
            #expect(read.status == .ok, "\(read.status) \(String(decoding: read.body, as: UTF8.self))")
            #expect(try await a.call(.post, "/v1/session", headers: appKey, json: "{}").status == .created)
            #expect(try await a.call(.delete, "/v1/session", headers: [.authorization: "Bearer \(reader)"]).status == .noContent)

            discord.setLatency(.zero)
            let statuses = answers.statuses.withLock { $0 }
            #expect(statuses.count == tokens.count)
            #expect(statuses.allSatisfy { $0 == .created }, "\(statuses)")
        }
    }

    @Test func aStreamOnOneReplicaHearsWhatTheOtherIngested() async throws {
        try await withReplicas(gatewayOnA: true) { a, b, discord, _, _, _ in
            let opened = try await a.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
            let token = try #require(try JSON.parse(opened.body)["token"]?.stringValue)
            let auth: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: "first"]
            #expect(try await a.call(.post, "/v1/messages", headers: auth, json: #"{"content":"hello"}"#).status == .created)
            try await settled(a, b)
            let thread = try #require(discord.threads().first?.id)

            // Replica B has no gateway: what it streams, replica A ingested and announced through PostgreSQL.
            let stream = try await EventStreamClient.open(port: try #require(Int(b.base.split(separator: ":").last ?? "")), token: token, http: b.http)
            defer { stream.close() }
            try await stream.next("the first unread count") { $0.name == "unread" }
            let reply = try discord.replyAsAgent(inThread: thread, content: "from the other replica")
            let created = try await stream.next("the reply on replica B") { $0.name == "message.created" }
            #expect(created.json["id"] as? String == reply.id)
            try discord.typeAsAgent(inThread: thread)
            try await stream.next("the agent typing on replica B") { $0.name == "typing" }
            // A read marked through replica A reaches the stream on B.
            let read = try await a.call(.post, "/v1/read", headers: [.authorization: "Bearer \(token)"], json: #"{"messageId":"\#(reply.id)"}"#)
            #expect(read.status == .ok)
            try await stream.next("the read mark on replica B") { $0.name == "read" && $0.json["messageId"] as? String == reply.id }
        }
    }

    /// Tracing on: a reply ingested by replica A and written to the stream replica B holds is one
    /// trace; the announcement through PostgreSQL carries it (`live.events` on B is the child of
    /// `mirror.ingest` on A).
    @Test func aReplyIngestedOnOneReplicaIsTracedToTheStreamOnTheOther() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withReplicas(gatewayOnA: true, adjust: TracingTests.tracing(endpoint)) { a, b, discord, _, _, _ in
                let opened = try await a.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
                let token = try #require(try JSON.parse(opened.body)["token"]?.stringValue)
                let auth: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: "first"]
                #expect(try await a.call(.post, "/v1/messages", headers: auth, json: #"{"content":"hello"}"#).status == .created)
                try await settled(a, b)
                let thread = try #require(discord.threads().first?.id)
                let stream = try await EventStreamClient.open(port: try #require(Int(b.base.split(separator: ":").last ?? "")), token: token, http: b.http)
                defer { stream.close() }
                try await stream.next("the first unread count") { $0.name == "unread" }
                let reply = try discord.replyAsAgent(inThread: thread, content: "traced across replicas")
                try await stream.next("the reply on replica B") { $0.name == "message.created" && $0.data.contains(reply.id) }
                let spans = try await receiver.someTrace(holding: ["gateway.events", "mirror.ingest", "live.events"])
                #expect(try spans.named("live.events").parentID == spans.named("mirror.ingest").spanID)
            }
        }
    }

    /// A token signed out through replica A ends its stream on replica B (the announcement goes
    /// through PostgreSQL, the path that wakes streams); another token's stream stays open.
    @Test func signingOutOnOneReplicaEndsTheTokensStreamOnTheOther() async throws {
        try await withReplicas { a, b, _, _, _, _ in
            let opened = try await a.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
            let first = try JSON.parse(opened.body)
            let token = try #require(first["token"]?.stringValue)
            let userID = try #require(first["userId"]?.stringValue)
            let renewed = try await a.call(
                .post, "/v1/session", headers: [.init("X-App-Key")!: "app", .authorization: "Bearer \(token)"], json: #"{"userId":"\#(userID)"}"#)
            let other = try #require(try JSON.parse(renewed.body)["token"]?.stringValue)
            let portB = try #require(Int(b.base.split(separator: ":").last ?? ""))
            let ending = try await EventStreamClient.open(port: portB, token: token, http: b.http)
            defer { ending.close() }
            let staying = try await EventStreamClient.open(port: portB, token: other, http: b.http)
            defer { staying.close() }
            try await ending.next("the first unread count") { $0.name == "unread" }
            try await staying.next("the first unread count") { $0.name == "unread" }

            #expect(try await a.call(.delete, "/v1/session", headers: [.authorization: "Bearer \(token)"]).status == .noContent)
            try await ending.ends("the signed-out token's stream on replica B ended")
            #expect(!staying.ended)
        }
    }

    /// One user's queue across two replicas and a third that died holding it: messages accepted
    /// by either replica wait while the dead one's hold lasts, then whichever replica takes the
    /// queue delivers them once each, in the order they were accepted.
    @Test func aQueueADeadReplicaHeldIsDeliveredOnceInOrderByTheOthers() async throws {
        try await withReplicas(gatewayOnA: true) { a, b, discord, _, _, url in
            let opened = try await a.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
            let session = try JSON.parse(opened.body)
            let token = try #require(session["token"]?.stringValue)
            let user = try #require(session["userId"]?.stringValue.flatMap { UserID($0) })
            func send(_ replica: Client, _ text: String) async throws -> JSON {
                let headers: HTTPFields = [.authorization: "Bearer \(token)", .init("Idempotency-Key")!: text]
                let reply = try await replica.call(.post, "/v1/messages", headers: headers, json: #"{"content":"\#(text)"}"#)
                #expect(reply.status == .created)
                return try JSON.parse(reply.body)
            }
            _ = try await send(a, "m0")
            try await settled(a, b)
            let thread = try #require(discord.threads().first?.id)

            // A replica that died mid-delivery: its hold on the queue outlives it for a while.
            let claimed = try await PostgresStore.withRunning(url: url, logger: testLogger()) { store in
                try await store.claimOutbox(of: user, holder: "dead-replica", until: Date().addingTimeInterval(3), now: Date())
            }
            #expect(claimed)
            var ids: [String] = []
            for index in 1...6 {
                let sent = try await send(index.isMultiple(of: 2) ? a : b, "m\(index)")
                #expect(sent["delivery"] == "queued")
                ids.append(try #require(sent["id"]?.stringValue))
            }
            let expected = (0...6).map { "m\($0)" }
            try await discord.waitUntil("the queue delivered once its hold ran out", timeout: .seconds(90)) {
                $0.messages(inThread: thread).count >= expected.count
            }
            try await settled(a, b)
            #expect(discord.messages(inThread: thread).map(\.content) == expected)
            let page = try JSON.parse(try await b.call(.get, "/v1/messages", headers: [.authorization: "Bearer \(token)"]).body)
            let listed = try #require(page["messages"]?.arrayValue)
            #expect(listed.compactMap { $0["content"]?.stringValue } == expected)
            #expect(Array(listed.compactMap { $0["id"]?.stringValue }.dropFirst()) == ids)
            #expect(listed.allSatisfy { $0["delivery"] == "sent" })
        }
    }

    /// Returns once both replicas' background work is done: what either accepted is delivered
    /// (by whichever took its queue).
    func settled(_ a: Client, _ b: Client) async throws {
        // Twice: a queue one replica gave back (its hold) may be the other's to deliver meanwhile.
        for _ in 0..<2 {
            try await a.settled()
            try await b.settled()
        }
    }

    private func scenario(
        _ a: Client, _ b: Client, discord: DiscordEmulator, endpoints: DiscordEmulator.Endpoints, apns: APNsEmulator, url: String
    ) async throws {
        let opened = try await a.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
        let token = try #require(try JSON.parse(opened.body)["token"]?.stringValue)
        let auth: HTTPFields = [.authorization: "Bearer \(token)"]
        let device = String(repeating: "ef", count: 32)
        #expect(try await b.call(.put, "/v1/push-token", headers: auth, json: #"{"token":"\#(device)","environment":"development"}"#).status == .noContent)

        // 40 first messages at once, split between the replicas. They queue behind the user's lock,
        // which gives up after 30 s: on a machine busy with the rest of the suite a send on
        // PostgreSQL takes up to half a second here, so more would test that deadline instead.
        let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
            for index in 0..<40 {
                group.addTask {
                    var headers = auth
                    headers[.init("Idempotency-Key")!] = "k\(index)"
                    return try await (index.isMultiple(of: 2) ? a : b).call(.post, "/v1/messages", headers: headers, json: #"{"content":"m\#(index)"}"#).status
                }
            }
            return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 != .created } == [])
        // Accepted; the replicas' outboxes deliver them (either replica any of them, one at a time).
        try await settled(a, b)
        #expect(discord.threads().count == 1)
        let thread = try #require(discord.threads().first?.id)
        #expect(Set(discord.messages(inThread: thread).map(\.content)) == Set((0..<40).map { "m\($0)" }))
        #expect(discord.messages(inThread: thread).count == 40)

        // A retry that lands on the other replica posts nothing.
        var retry = auth
        retry[.init("Idempotency-Key")!] = "k0"
        let replayed = try await b.call(.post, "/v1/messages", headers: retry, json: #"{"content":"m0"}"#)
        #expect(replayed.status == .created)
        // Anything the replay had queued would be delivered by now.
        try await settled(a, b)
        #expect(discord.messages(inThread: thread).count == 40)

        // The same gateway event delivered to both replicas pushes once.
        let reply = try discord.replyAsAgent(inThread: thread, content: "one push only")
        let page = try await DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: testLogger())
            .messages(in: thread, limit: 1)
        let message = try #require(page.first)
        #expect(message.id == reply.id)
        let batch = String(decoding: try JSONEncoder().encode(["events": [ForumEvent.messageCreated(message)]]), as: UTF8.self)
        let secret: HTTPFields = [.authorization: "Bearer secret"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for replica in [a, b, a, b] {
                group.addTask { _ = try await replica.call(.post, "/internal/gateway/events", headers: secret, json: batch) }
            }
            try await group.waitForAll()
        }
        try await apns.waitUntil("the reply pushed") { $0.deliveries(to: device).count >= 1 }
        let id = try #require(Snowflake(reply.id))
        let stored = try await PostgresStore.withRunning(url: url, logger: testLogger()) { try await $0.mirroredMessages([id]).first }
        #expect(stored?.push == .sent)
        #expect(apns.deliveries(to: device).count == 1)
    }
}
