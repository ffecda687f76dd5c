import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskStore

/// Each replica answers polls and token checks from memory (`ReplicaCache`), kept true by the words
/// of change every write sends through PostgreSQL. What a poll on one replica shows must never be
/// older than what another replica committed before the poll began, and a revoked token must be
/// refused at once everywhere.
@Suite("A replica's memory on one PostgreSQL", .enabled(if: postgresIsAvailable), .timeLimit(.minutes(2)))
struct ReplicaMemoryTests {
    typealias Client = ReplicaTests.Client

    /// The clock replica B's memory ages on: it moves only when the test moves it.
    final class TestClock: Sendable {
        private let start = ContinuousClock.now
        private let offset = Mutex(Duration.zero)
        func now() -> ContinuousClock.Instant { start.advanced(by: offset.withLock { $0 }) }
        func advance(_ by: Duration) { offset.withLock { $0 += by } }
    }

    struct User {
        let token: String
        var auth: HTTPFields { [.authorization: "Bearer \(token)"] }
    }

    @Test func aReplyCommittedThroughReplicaAIsInTheNextPollOnReplicaB() async throws {
        try await withTwoReplicas { a, b, storeB, discord, _ in
            let user = try await conversation(on: b, other: a, fed: a, discord: discord)
            let before = storeB.replicaCacheCounts.hits
            #expect(try await contents(b, user) == ["hello", "first answer"])
            #expect(try await contents(b, user) == ["hello", "first answer"])
            // B answered from memory (the token check and the page).
            #expect(storeB.replicaCacheCounts.hits > before)

            for round in 1...3 {
                let thread = try #require(discord.threads().first?.id)
                try discord.replyAsAgent(inThread: thread, content: "answer \(round)")
                // A (the gateway's replica) has committed it once it took the event in and A's poll shows it...
                try await a.caughtUp(with: discord)
                try #require(try await contents(a, user).last == "answer \(round)", "answer \(round) on A")
                // ...and a poll on B begun after that shows it too: no waiting.
                #expect(try await contents(b, user).last == "answer \(round)")
            }
        }
    }

    /// Word of a change may reach B after the poll that must show it has begun: the poll waits
    /// for it (its barrier's ping comes after the word) instead of answering from memory.
    @Test func aWordOfChangeThatComesLateIsWaitedFor() async throws {
        try await withTwoReplicas { a, b, storeB, discord, _ in
            let user = try await conversation(on: b, other: a, fed: a, discord: discord)
            #expect(try await contents(b, user) == ["hello", "first answer"])
            let before = storeB.replicaCacheCounts.hits
            #expect(try await contents(b, user) == ["hello", "first answer"])
            #expect(storeB.replicaCacheCounts.hits > before)

            storeB.holdNotifications(true)
            let thread = try #require(discord.threads().first?.id)
            try discord.replyAsAgent(inThread: thread, content: "late answer")
            try await a.caughtUp(with: discord)
            try #require(try await contents(a, user).last == "late answer", "the answer on A")
            let answered = Atomic(false)
            let poll = Task {
                defer { answered.store(true, ordering: .relaxed) }
                return try await contents(b, user)
            }
            // The poll's ping is behind the word, both held, so B waits (an answer from memory
            // now would be the stale one).
            try await eventually("B's ping held, or B's answer") { storeB.heldPings > 0 || answered.load(ordering: .relaxed) }
            storeB.holdNotifications(false)
            #expect(try await poll.value.last == "late answer")
        }
    }

    @Test func aLostWordOfChangeCostsTimeNeverMoreThanTheBound() async throws {
        let clock = TestClock()
        try await withTwoReplicas(clockB: clock) { a, b, storeB, discord, _ in
            let user = try await conversation(on: b, other: a, fed: a, discord: discord)
            #expect(try await contents(b, user) == ["hello", "first answer"])
            let before = storeB.replicaCacheCounts.hits
            #expect(try await contents(b, user) == ["hello", "first answer"])
            #expect(storeB.replicaCacheCounts.hits > before)

            // B's listener stays up but loses the word of the next change.
            storeB.dropWordsOfChange(true)
            let thread = try #require(discord.threads().first?.id)
            try discord.replyAsAgent(inThread: thread, content: "second answer")
            try await a.caughtUp(with: discord)
            try #require(try await contents(a, user).last == "second answer", "the answer on A")
            // Within the bound B may still answer what it remembered; past it, never.
            clock.advance(PostgresStore.memoryMaximumAge)
            #expect(try await contents(b, user).last == "second answer")
        }
    }

    @Test func aClosedSessionAndAnErasedUserAreRefusedAtOnceOnTheOtherReplica() async throws {
        try await withTwoReplicas { a, b, storeB, discord, _ in
            let closing = try await conversation(on: a, other: b, fed: a, discord: discord)
            let erased = try await conversation(on: a, other: b, fed: a, discord: discord, answered: false)
            for user in [closing, erased] { #expect(try await b.call(.get, "/v1/messages", headers: user.auth).status == .ok) }
            let before = storeB.replicaCacheCounts.hits
            for user in [closing, erased] { #expect(try await b.call(.get, "/v1/messages", headers: user.auth).status == .ok) }
            #expect(storeB.replicaCacheCounts.hits > before)

            #expect(try await a.call(.delete, "/v1/session", headers: closing.auth).status.code < 300)
            #expect(try await b.call(.get, "/v1/messages", headers: closing.auth).status == .unauthorized)

            #expect(try await a.call(.delete, "/v1/me", headers: erased.auth).status.code < 300)
            #expect(try await b.call(.get, "/v1/messages", headers: erased.auth).status == .unauthorized)
        }
    }

    /// A user with a thread whose first message (and, with `answered`, a support answer) both
    /// replicas' mirror hold; the gateway feeds replica A (`fed`). `other` is the second replica.
    private func conversation(on replica: Client, other: Client, fed: Client, discord: DiscordEmulator, answered: Bool = true) async throws -> User {
        let opened = try await replica.call(.post, "/v1/session", headers: [.init("X-App-Key")!: "app"], json: "{}")
        let user = User(token: try #require(try JSON.parse(opened.body)["token"]?.stringValue))
        var headers = user.auth
        headers[.init("Idempotency-Key")!] = "first"
        #expect(try await replica.call(.post, "/v1/messages", headers: headers, json: #"{"content":"hello"}"#).status == .created)
        // Delivered by either replica (the other's look for due queues may take it first): both
        // settled, twice, as `ReplicaTests.settled` does.
        for _ in 0..<2 {
            try await replica.settled()
            try await other.settled()
        }
        guard answered else { return user }
        let thread = try #require(discord.threads().last?.id)
        try discord.replyAsAgent(inThread: thread, content: "first answer")
        try await fed.caughtUp(with: discord)
        try #require(try await contents(replica, user) == ["hello", "first answer"], "the answer mirrored")
        return user
    }

    private func contents(_ replica: Client, _ user: User) async throws -> [String] {
        let page = try await replica.call(.get, "/v1/messages?limit=20", headers: user.auth)
        guard page.status == .ok else { return ["HTTP \(page.status.code)"] }
        return (try JSON.parse(page.body)["messages"]?.arrayValue ?? []).compactMap { $0["content"]?.stringValue }
    }

    /// Replica A holds the gateway; replica B's store is the one the test looks into.
    private func withTwoReplicas(
        clockB: TestClock? = nil,
        _ body: @Sendable (Client, Client, PostgresStore, DiscordEmulator, String) async throws -> Void
    ) async throws {
        try await withFreshPostgresSchema { url in
            try await DiscordEmulator.withRunning(configuration: .fastWindows(scale: 0.02), logger: testLogger()) { discord in
                let endpoints = await discord.endpoints()
                var configuration = ServerConfiguration(
                    discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                    forumChannelID: endpoints.forumChannelID, appKey: "app")
                configuration.port = 0
                configuration.storeURL = url
                configuration.gatewaySecret = "secret"
                configuration.quotas = .off
                let storeA = try PostgresStore(url: url, logger: testLogger())
                let storeB = try PostgresStore(url: url, logger: testLogger(), cacheClock: { clockB?.now() ?? ContinuousClock.now })
                let workA = BackgroundWork()
                let replicaA = buildApplication(configuration: configuration, store: storeA, inProcessGateway: true, work: workA, logger: testLogger())
                let workB = BackgroundWork()
                let replicaB = buildApplication(configuration: configuration, store: storeB, work: workB, logger: testLogger())
                try await withOwnHTTPClient(HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(60)))) { http in
                    try await replicaA.test(.live) { a in
                        try await replicaB.test(.live) { b in
                            try await body(
                                Client(port: try #require(a.port), http: http, work: workA), Client(port: try #require(b.port), http: http, work: workB), storeB,
                                discord, url)
                        }
                    }
                }
            }
        }
    }
}
