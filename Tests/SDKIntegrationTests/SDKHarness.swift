import DiscordEmulator
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import TestSupport
import ThreadDeskKit
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// ThreadDesk on loopback (a real SQLite file, the in-process gateway) against the Discord
/// emulator, and SDK clients pointed at it.
struct SDKHarness: Sendable {
    let emulator: DiscordEmulator
    let serverURL: URL
    let appKey: String
    let folder: URL
    let store: any UserStore
    let work: BackgroundWork

    /// Returns once the server took in every gateway event the emulator dispatched to it and has
    /// done its background work (as `Harness.settled()` in the server's tests).
    func settled(within timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var left: Duration { max(.milliseconds(1), ContinuousClock.now.duration(to: deadline)) }
        try await work.gatewayStarted(within: left)
        while true {
            let dispatched = emulator.gatewayPositions
            try await work.gatewayCaughtUp(dispatched, within: left)
            try await work.settled(within: left)
            if emulator.gatewayPositions == dispatched { return }
        }
    }

    /// A client with its session and outbox in files of this test's folder (named `device`, so
    /// a second client with the same name is the same app launched again).
    func client(
        device: String = "phone", userID: String? = nil, _ configure: (inout ThreadDeskConfiguration) -> Void = { _ in }
    ) -> ThreadDeskClient {
        let base = folder.appendingPathComponent(device)
        var configuration = ThreadDeskConfiguration(
            serverURL: serverURL, appKey: appKey, userID: userID,
            sessionStore: FileSessionStore(url: base.appendingPathComponent("session.json")),
            outbox: FileOutbox(directory: base.appendingPathComponent("outbox")))
        configuration.requestTimeout = 10
        configuration.retryBackoff = Backoff(base: 0.05, cap: 0.2)
        configuration.streamBackoff = Backoff(base: 0.05, cap: 0.2)
        configure(&configuration)
        return ThreadDeskClient(configuration)
    }

    /// The forum thread of a user, once the server's work is done.
    func thread(of client: ThreadDeskClient) async throws -> String {
        // The outbox makes the thread after the send was answered.
        try await settled()
        let user = try requireValue(await client.userID.flatMap { UserID($0) }, "no session")
        return try requireValue(try await store.user(user)?.threadID, "no thread for \(user)")
    }
}

func withSDKServer(
    faq: Bool = false,
    _ configure: @Sendable (inout ServerConfiguration) -> Void = { _ in }, _ body: @Sendable (SDKHarness) async throws -> Void
) async throws {
    try await DiscordEmulator.withRunning(configuration: .fastWindows(scale: 0.02), logger: quietLogger()) { emulator in
        let discord = await emulator.endpoints()
        var configuration = ServerConfiguration(
            discordToken: discord.botToken, discordAPIURL: discord.restURL, guildID: discord.guildID,
            forumChannelID: discord.forumChannelID, appKey: "sdk-test-app-key")
        configuration.port = 0
        configuration.discordBudget = .seconds(5)
        configuration.quotas = .off
        configuration.live.readReceiptDelay = .milliseconds(100)
        if faq { configuration.faqChannelID = discord.faqChannelID }
        configure(&configuration)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("threaddesk-sdk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try makeStore(url: "sqlite://\(folder.appendingPathComponent("db.sqlite").path)", logger: quietLogger())
        let work = BackgroundWork()
        let app = buildApplication(configuration: configuration, store: store, inProcessGateway: true, work: work, logger: quietLogger())
        let appKey = configuration.appKey
        try await app.test(.live) { client in
            let port = try requireValue(client.port, "no port")
            try await body(SDKHarness(
                emulator: emulator, serverURL: URL(string: "http://127.0.0.1:\(port)")!, appKey: appKey, folder: folder, store: store,
                work: work))
        }
    }
}

func quietLogger() -> Logger {
    var logger = Logger(label: "threaddesk-sdk-test")
    logger.logLevel = ProcessInfo.processInfo.environment["THREADDESK_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    return logger
}

struct Missing: Error, CustomStringConvertible {
    let description: String
}

/// The value, or a failure naming what was missing.
func requireValue<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw Missing(description: what) }
    return value
}

/// Everything an SDK event sequence delivered, and waits (with deadlines) for what is expected.
actor EventRecorder {
    private let log = Watched<[ThreadDeskEvent]>([])
    var events: [ThreadDeskEvent] { log.value }
    private var task: Task<Void, Never>?

    init() {}

    func start(_ stream: AsyncStream<ThreadDeskEvent>) {
        let log = self.log
        task = Task { for await event in stream { log.update { $0.append(event) } } }
    }

    /// Waits until the events so far satisfy `condition`; fails after `timeout`.
    func wait(for what: String, timeout: Duration = .seconds(60), until condition: ([ThreadDeskEvent]) -> Bool) async throws {
        try await log.wait(for: what, timeout: timeout, until: condition)
    }

    func stop() { task?.cancel() }

    /// Waits until an event matching `predicate` arrived; fails after `timeout`.
    @discardableResult
    func next(_ what: String, timeout: Duration = .seconds(60), after index: Int = 0, _ predicate: (ThreadDeskEvent) -> Bool) async throws -> ThreadDeskEvent {
        try await log.wait(for: what, timeout: timeout) { $0.dropFirst(index).contains(where: predicate) }
        return log.value.dropFirst(index).first(where: predicate)!
    }

    var createdMessages: [SupportMessage] {
        events.compactMap { if case .messageCreated(let message) = $0 { message } else { nil } }
    }
}
