import APNsEmulator
import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import Synchronization
import TestSupport

/// A real ThreadDesk server on loopback, on a real SQLite file, talking to a real Discord emulator.
struct Harness: Sendable {
    let client: any TestClientProtocol
    let emulator: DiscordEmulator
    let apns: APNsEmulator
    let discord: DiscordEmulator.Endpoints
    let store: any UserStore
    let configuration: ServerConfiguration
    /// The port of the internal listener (`INTERNAL_PORT`), once it listens; nil without one.
    let internalPort: ListenerPort
    /// What the server's background parts have to do: `settled()` waits on it.
    let work: BackgroundWork
    /// Whether the server keeps the gateway open itself (`withServer(gateway: true)`).
    let gateway: Bool

    /// Returns once the server's gateway has taken in every event the emulator dispatched to its
    /// sessions so far (handed them to ingestion; what ingestion then does is `settled()`'s).
    func takenIn(within timeout: Duration = .seconds(120)) async throws {
        try await work.gatewayCaughtUp(emulator.gatewayPositions, within: timeout)
    }

    /// Returns once the server has done what it has to: with the gateway, first taken in every
    /// event the emulator dispatched to it; then its queues empty and nothing in flight (ingestion,
    /// pushes due, status tags, typing, read receipts, slash commands, reconciliation, the FAQ
    /// forum). What the server's work sent to the emulators (REST calls, pushes) is there by then,
    /// and the events those calls caused are taken in too. Throws, naming what is still busy,
    /// when `timeout` passes first. Timed work not yet due (a retry, a read receipt's delay on a
    /// manual clock) is not waited for: the test moves its clock, then settles again.
    func settled(within timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var left: Duration { max(.milliseconds(1), ContinuousClock.now.duration(to: deadline)) }
        if gateway { try await work.gatewayStarted(within: left) }
        while true {
            let dispatched = gateway ? emulator.gatewayPositions : [:]
            try await work.gatewayCaughtUp(dispatched, within: left)
            try await work.settled(within: left)
            // The work done may have made Discord dispatch more (a thread's tags changed).
            if !gateway || emulator.gatewayPositions == dispatched { return }
        }
    }

    struct Reply: Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: Data

        var json: JSON { (try? JSON.parse(body)) ?? .null }
        var errorCode: String? { json["error"]?["code"]?.stringValue }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }
    }

    func request(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = nil, headers: HTTPFields = [:],
        json: String? = nil, raw: Data? = nil, contentType: String = "application/json"
    ) async throws -> Reply {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        let body = json.map { Data($0.utf8) } ?? raw
        if body != nil && headers[.contentType] == nil { headers[.contentType] = contentType }
        let port = try self.port
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(uri)")
        request.method = .init(rawValue: method.rawValue)
        for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await Self.http.execute(request, deadline: .now() + Self.clientDeadline)
        let received = try await response.body.collect(upTo: 256 << 20)
        var fields = HTTPFields()
        for header in response.headers { if let name = HTTPField.Name(header.name) { fields.append(.init(name: name, value: header.value)) } }
        return Reply(status: .init(code: Int(response.status.code)), headers: fields, body: Data(buffer: received))
    }

    /// The tests' own client, its deadline well past the server's own request timeout and Discord
    /// budget: the server answers (with an error when Discord fails) before the client gives up,
    /// however busy the machine. (HummingbirdTesting's client has a fixed 15 s deadline, the
    /// same as the harness's Discord budget: a retried outage raced it on a loaded machine.)
    static let clientDeadline = TimeAmount.seconds(120)
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    private var port: Int {
        get throws {
            guard let port = client.port else { throw HarnessError.unexpected(.internalServerError, "the server has no port") }
            return port
        }
    }

    struct Session: Sendable, Decodable {
        let userId: String
        let token: String
    }

    func session(_ body: String = "{}", token: String? = nil) async throws -> Session {
        let reply = try await request(.post, "/v1/session", token: token, headers: [.init("X-App-Key")!: configuration.appKey], json: body)
        guard reply.status == .created else { throw HarnessError.unexpected(reply.status, String(decoding: reply.body, as: UTF8.self)) }
        return try reply.decode(Session.self)
    }

    /// Sends a message and, once it is accepted, waits until the server's work is done (the outbox
    /// delivered it, or it waits for a retry not due yet): what Discord got is there by then.
    /// `accept(_:token:)` is the send alone.
    func send(_ content: String, token: String, key: String = UUID().uuidString) async throws -> Reply {
        let reply = try await accept(content, token: token, key: key)
        if reply.status == .created { try await settled() }
        return reply
    }

    /// Sends a message and returns the server's answer as soon as it comes (the message accepted,
    /// not yet delivered).
    func accept(_ content: String, token: String, key: String = UUID().uuidString) async throws -> Reply {
        let body = String(decoding: try JSONEncoder().encode(["content": content]), as: UTF8.self)
        return try await request(.post, "/v1/messages", token: token, headers: [.init("Idempotency-Key")!: key], json: body)
    }

    func messages(token: String, query: String = "") async throws -> [JSON] {
        let reply = try await request(.get, "/v1/messages\(query)", token: token)
        guard reply.status == .ok else { throw HarnessError.unexpected(reply.status, String(decoding: reply.body, as: UTF8.self)) }
        return reply.json["messages"]?.arrayValue ?? []
    }

    func thread(of userID: String) async throws -> String? {
        try await store.user(.init(userID)!)?.threadID
    }

    /// Posts that reached the emulator, across all routes that create messages.
    var discordPosts: Int {
        emulator.counters.requests("POST", "/channels/{channel_id}/messages")
            + emulator.counters.requests("POST", "/channels/{channel_id}/threads")
    }
}

/// A port a listener reports once it is listening.
final class ListenerPort: Sendable {
    private let port = Watched<Int?>(nil)

    func set(_ value: Int) { port.update { $0 = value } }

    /// The port, waiting (with a deadline) for the listener to start.
    func value() async throws -> Int {
        try await port.wait(for: "the listener to start") { $0 != nil }
        return port.value ?? 0
    }
}

enum HarnessError: Error {
    case unexpected(HTTPResponse.Status, String)
}

func testLogger(_ handler: (any LogHandler)? = nil) -> Logger {
    if let handler { return Logger(label: "threaddesk-test") { _ in handler } }
    var logger = Logger(label: "threaddesk-test")
    // THREADDESK_TEST_LOG_LEVEL=debug (or trace) shows what the servers, stores and pools do.
    logger.logLevel = ProcessInfo.processInfo.environment["THREADDESK_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    return logger
}

func temporaryStorePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("threaddesk-server-\(UUID().uuidString)/db.sqlite").path
}

/// What a test sets up in Discord before the server starts, with what the server is told about
/// it (a role's id, say). Not a closure parameter of `withServer`, so trailing closures still
/// mean the configuration and the body.
struct EmulatorPreparation: Sendable {
    /// May call Discord (the emulator) as an admin would, e.g. to make a forum.
    let apply: @Sendable (DiscordEmulator, inout ServerConfiguration) async throws -> Void
    init(_ apply: @escaping @Sendable (DiscordEmulator, inout ServerConfiguration) async throws -> Void) { self.apply = apply }
}

func withServer(
    emulator emulatorConfiguration: DiscordEmulator.Configuration = .fastWindows(scale: 0.02),
    logger: Logger = testLogger(),
    defaultTagIndex: Int? = nil,
    gateway: Bool = false,
    store storeURL: String? = nil,
    time: ServerTime = .system,
    prepare: EmulatorPreparation = .init { _, _ in },
    apnsTopics: [String] = [],
    _ configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (Harness) async throws -> Void
) async throws {
    var apnsConfiguration = APNsEmulator.Configuration()
    apnsConfiguration.otherTopics = apnsTopics
    try await APNsEmulator.withRunning(configuration: apnsConfiguration, logger: testLogger()) { apns in
    // Discord's 3 s to answer an interaction is the emulator's to test, on a clock it moves; here
    // a loaded machine must not make the server's answer late.
    var emulatorConfiguration = emulatorConfiguration
    emulatorConfiguration.interactionResponseWindow = .seconds(600)
    // On a clock the test drives, a rate-limit window (Discord's buckets, the client's own global
    // limit) ends only when the test moves the clock: a request that meets one would wait for good.
    // Such tests are about other waits; rate limits have their own tests on the real clock.
    let drivenClock = !(time.clock is ContinuousClock)
    if drivenClock {
        for keyPath in [\DiscordEmulator.Configuration.messagePostLimit, \.threadCreateLimit, \.defaultRouteLimit, \.globalLimit] {
            emulatorConfiguration[keyPath: keyPath].limit = max(emulatorConfiguration[keyPath: keyPath].limit, 100_000)
        }
    }
    try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: testLogger()) { emulator in
        let discord = await emulator.endpoints()
        let credentials = await apns.credentials()
        var configuration = ServerConfiguration(
            discordToken: discord.botToken, discordAPIURL: discord.restURL, guildID: discord.guildID,
            forumChannelID: discord.forumChannelID, appKey: "test-app-key")
        configuration.port = 0
        // Room for a Discord call on a machine busy with the whole suite; the tests of outages
        // wait it out (or set their own).
        configuration.discordBudget = .seconds(15)
        configuration.defaultTagID = defaultTagIndex.map { emulator.forumTagIDs[$0] }
        var apnsSettings = APNsSettings(
            keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, topic: credentials.topic)
        apnsSettings.url = credentials.url
        apnsSettings.caCertificatePEM = credentials.caCertificatePEM
        configuration.apns = apnsSettings
        configuration.gatewaySecret = "test-gateway-secret"
        // Without an internal listener, /metrics is served (publicly) only behind a token.
        configuration.metricsToken = Harness.metricsToken
        // Every user of a test comes from one address; the quota tests switch limits on.
        configuration.quotas = .off
        // Status tags are Discord calls of their own (the forum's tags at start, a thread's on each
        // turn of the conversation): off, so tests count only the calls they are about; their
        // tests switch them on.
        configuration.statusTags = nil
        // The slash commands' registration is a Discord call of its own too: their tests switch it on.
        configuration.desk.commands = false
        if drivenClock { configuration.discordGlobalLimit = max(configuration.discordGlobalLimit, 100_000) }
        try await prepare.apply(emulator, &configuration)
        configure(&configuration)
        // A user's lock waited for as long as a test's requests may take (the server's 30 s is a
        // client's patience, not a test's): fifty sends queued on one user on a machine busy with
        // the suite took longer.
        let store = try makeStore(url: storeURL ?? "sqlite://\(temporaryStorePath())", logger: testLogger(), lockWait: .seconds(120))
        let internalPort = ListenerPort()
        let work = BackgroundWork()
        let app = buildApplication(
            configuration: configuration, store: store, inProcessGateway: gateway, time: time, work: work, logger: logger,
            onInternalServerRunning: { internalPort.set($0) })
        let configured = configuration
        try await app.test(.ahc(.http)) { client in
            try await body(
                Harness(
                    client: client, emulator: emulator, apns: apns, discord: discord, store: store, configuration: configured,
                    internalPort: internalPort, work: work, gateway: gateway))
        }
    }
    }
}

extension Harness {
    /// `settled()` on a server whose clock is `clock`, for work that waits on that clock a short
    /// while (a Discord call's retries during an outage, within its budget): whenever something
    /// sleeps on the clock until at most `step` from now, the clock moves to that moment, as time
    /// would pass. Longer sleeps (the next round of a periodic job, a push's backoff) stay the
    /// test's to pass.
    func settled(driving clock: ManualClock, step: Duration = .seconds(1), within timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let left = max(.milliseconds(1), ContinuousClock.now.duration(to: deadline))
            let done = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await self.settled(within: left)
                    return true
                }
                group.addTask {
                    try await clock.changes.wait(for: "a short sleep on the server's clock", timeout: left) { _ in
                        clock.nextDeadline.map { clock.now.duration(to: $0) <= step } ?? false
                    }
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            if done { return }
            try clock.advanceToNextDeadline()
        }
    }

    /// Waits for the server's gateway to take in a session other than `known` (after an invalid
    /// session or a dropped connection the emulator made), then for it to settle.
    func newGatewaySession(since known: Set<String>, within timeout: Duration = .seconds(120)) async throws {
        try await work.gatewaySession(notIn: known, within: timeout)
        try await settled(within: timeout)
    }

    /// A user with a session, a push token and a thread.
    func userWithThread(device: String = String(repeating: "ab", count: 32), first: String = "hello") async throws -> (session: Session, thread: String, device: String) {
        let user = try await session()
        let set = try await request(.put, "/v1/push-token", token: user.token, json: #"{"token":"\#(device)","environment":"development"}"#)
        guard set.status == .noContent else { throw HarnessError.unexpected(set.status, "push token") }
        _ = try await send(first, token: user.token)
        guard let thread = try await thread(of: user.userId) else { throw HarnessError.unexpected(.internalServerError, "no thread") }
        return (user, thread, device)
    }

    static let metricsToken = "test-metrics-token-0123456789abcdef"

    /// `/metrics` as a scraper reads it (with `METRICS_TOKEN`).
    func metricsText() async throws -> String {
        let reply = try await request(.get, "/metrics", headers: [.authorization: "Bearer \(Self.metricsToken)"])
        guard reply.status == .ok else { throw HarnessError.unexpected(reply.status, "/metrics") }
        return String(decoding: reply.body, as: UTF8.self)
    }

    /// A counter from `/metrics`, e.g. `threaddesk_pushes_total{outcome="sent"}`; 0 when absent.
    func metric(_ series: String) async throws -> Double {
        let text = try await metricsText()
        let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// A client of the emulator acting as the bot, to see what Discord holds.
    var discordClient: DiscordClient<AnyClock> {
        DiscordClient(configuration: .init(baseURL: discord.restURL, token: discord.botToken), logger: testLogger())
    }

    /// Posts forum events to the internal route, as the gateway daemon does.
    func forward(_ body: String) async throws -> Reply {
        try await request(.post, "/internal/gateway/events", headers: [.authorization: "Bearer test-gateway-secret"], json: body)
    }
}

extension Harness {
    /// The mirror's copy of a Discord message.
    func mirrored(_ id: String) async throws -> MirroredMessage? {
        guard let snowflake = Snowflake(id) else { return nil }
        return try await store.mirroredMessages([snowflake]).first
    }

    /// The push state of a message once the mirror has it.
    func pushState(of id: String) async throws -> PushState? {
        try await mirrored(id)?.push
    }
}
