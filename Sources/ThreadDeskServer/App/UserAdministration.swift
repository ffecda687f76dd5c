import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `threaddesk admin user …`: the same erasure and export as the API's, for requests that come by
/// email, run from a shell beside the servers on the store they share.
public struct UserAdministration: Sendable {
    let store: any UserStore
    let exporter: DataExporter
    /// nil without a Discord configuration: erasing needs one, the rest does not.
    let eraser: UserEraser?
    let configuration: ServerConfiguration?
    let logger: Logger

    /// `configuration` is what `serve` reads; without one, users can be shown, exported and
    /// listed but not erased.
    public init(store: any UserStore, configuration: ServerConfiguration?, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        exporter = DataExporter(store: store, sync: nil, now: Date.init)
        eraser = configuration.map { configuration in
            var discord = DiscordClient<AnyClock>.Configuration(baseURL: configuration.discordAPIURL, token: configuration.discordToken)
            discord.budget = configuration.discordBudget
            let client = DiscordClient(configuration: discord, logger: logger)
            return UserEraser(
                store: store, discord: client, deletion: configuration.privacy.deletion, hub: nil, status: nil,
                unrecorded: UnrecordedThreads(
                    store: store, discord: client, bot: BotIdentity(discord: client), catalog: configuration.catalog),
                metrics: ServerMetrics(), logger: logger)
        }
    }

    /// What ThreadDesk keeps about the user, or nil when it keeps nothing.
    /// - Parameter id: The user.
    /// - Throws: The store's errors.
    public func show(_ id: UserID) async throws -> KeptUserData? {
        guard let record = try await store.user(id) else { return nil }
        return try await exporter.kept(record)
    }

    /// The user's whole export as one JSON document (`DataExport` with every message), written a
    /// page at a time: memory holds one page however long the conversation. False when the store
    /// keeps nothing of the user.
    /// - Parameters:
    ///   - id: The user.
    ///   - pageSize: Messages read from the store at a time.
    ///   - write: Takes each piece of the document in order.
    /// - Throws: The store's errors, and what `write` throws.
    public func export(_ id: UserID, pageSize: Int = 500, write: (Data) throws -> Void) async throws -> Bool {
        guard let record = try await store.user(id) else { return false }
        let encoder = JSONEncoder.api
        var page = try await exporter.page(for: record, after: nil, limit: pageSize)
        func fragment(_ key: String, _ value: some Encodable) throws -> Data {
            Data("\"\(key)\":".utf8) + (try encoder.encode(value))
        }
        try write(Data("{".utf8) + (try fragment("exportedAt", page.exportedAt)) + Data(",".utf8) + (try fragment("user", page.user)))
        try write(Data(",\"messages\":[".utf8))
        var first = true
        while true {
            for message in page.messages {
                try write((first ? Data() : Data(",".utf8)) + (try encoder.encode(message)))
                first = false
            }
            guard page.hasMore, let last = page.messages.last.flatMap({ Snowflake($0.id) }) else { break }
            page = try await exporter.page(for: record, after: last, limit: pageSize)
        }
        try write(Data("],\"hasMore\":false}\n".utf8))
        return true
    }

    /// Erases the user as `DELETE /v1/me` does (their threads settled as `USER_DELETION` says); on
    /// PostgreSQL the replicas end the user's open streams at once. False when nothing was kept.
    /// - Parameter id: The user.
    /// - Throws: `DiscordError` when a thread cannot be settled (nothing is erased then), and the
    ///   store's errors.
    public func delete(_ id: UserID) async throws -> Bool {
        guard let eraser else { throw NoDiscordConfiguration() }
        let erased = try await eraser.erase(id, reason: .admin)
        if let bus = store.bus {
            do {
                try await bus.announce(LiveHub.tokensEndedAnnouncement(for: id))
            } catch {
                logger.warning("Could not tell the servers to end the user's streams; they end at their next token check", metadata: ["error": "\(error)"])
            }
        }
        return erased
    }

    /// Erases every user of `app` as `delete(_:)` erases one (`threaddesk admin app delete`), a
    /// page at a time; a user whose erasure fails is left, named in the error, and the rest go on.
    /// - Parameter progress: Told of each user erased.
    /// - Returns: How many users were erased.
    /// - Throws: `AppStillConfigured` while the configuration still lists the app; the store's
    ///   errors; `UsersLeft` when some could not be erased (their threads could not be settled).
    public func deleteApp(_ app: AppID, progress: (UserID) -> Void = { _ in }) async throws -> Int {
        guard let configuration else { throw NoDiscordConfiguration() }
        guard configuration.catalog[app] == nil else { throw AppStillConfigured(app: app) }
        var erased = 0
        var failed: [UserID] = []
        var after: UserID?
        while true {
            let page = try await store.users(of: app, after: after, limit: 100)
            guard let last = page.last else { break }
            for id in page {
                do {
                    if try await delete(id) { erased += 1 }
                    progress(id)
                } catch {
                    logger.warning("Could not erase a user of the app", metadata: ["user": "\(id.logValue)", "error": "\(error)"])
                    failed.append(id)
                }
            }
            after = last
        }
        guard failed.isEmpty else { throw UsersLeft(app: app, count: failed.count) }
        return erased
    }

    public struct AppStillConfigured: Error, CustomStringConvertible {
        let app: AppID
        public var description: String { "the app \(app) is still in APPS_FILE: remove it there (and restart the servers) first" }
    }

    public struct UsersLeft: Error, CustomStringConvertible {
        let app: AppID
        let count: Int
        public var description: String { "\(count) users of \(app) could not be erased (their threads could not be settled); run it again" }
    }

    /// Users whose last activity is older than `age`, at most `limit`.
    /// - Parameters:
    ///   - age: How long without activity.
    ///   - limit: Users at most.
    /// - Throws: The store's errors.
    public func inactive(for age: Duration, limit: Int) async throws -> [UserActivity] {
        try await store.inactiveUsers(before: Date().addingTimeInterval(-(age / .seconds(1))), limit: limit)
    }

    public struct NoDiscordConfiguration: Error, CustomStringConvertible {
        public var description: String { "erasing a user needs the server's Discord configuration (DISCORD_TOKEN and the rest)" }
    }
}

/// Runs `body` with the store `url` names, its connections running (PostgreSQL) and its schema current.
public func withStore<T: Sendable>(url: String, logger: Logger, _ body: (any UserStore) async throws -> T) async throws -> T {
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
        return try await PostgresStore.withRunning(url: url, logger: logger) { try await body($0) }
    }
    let store = try makeStore(url: url, logger: logger)
    try await store.migrate()
    return try await body(store)
}
