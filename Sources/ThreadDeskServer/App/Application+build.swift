import Deadlines
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import DiscordGateway
import Logging
import NIOCore
import ServiceLifecycle
import ThreadDeskStore

/// The store named by `STORE_URL`: `sqlite://path` (relative or absolute), `postgres://…` or `memory://`.
/// `lockWait`: how long a request waits for its user's lock at most (tests that queue many sends
/// on one user give it room on a busy machine).
public func makeStore(url: String, logger: Logger, lockWait: Duration = UserLockWait.standard) throws -> any UserStore {
    if url.hasPrefix("sqlite://") {
        return try SQLiteStore(path: String(url.dropFirst("sqlite://".count)), logger: logger, lockWait: lockWait)
    }
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") { return try PostgresStore(url: url, logger: logger, lockWait: lockWait) }
    if url == "memory://" { return MemoryStore(lockWait: lockWait) }
    throw ServerConfiguration.Problem(missing: [], invalid: ["STORE_URL (sqlite://path, postgres://… or memory://)"])
}

/// Builds the whole HTTP application from its configuration; `threaddesk serve`, the sandbox
/// and the tests all start the server through here.
///
/// With `inProcessGateway` the server also keeps the Discord gateway open and hands its events
/// straight to the push handler (`threaddesk serve --gateway`). `extraRoutes` adds routes that
/// are not part of the public API (the sandbox's pages).
public func buildApplication(
    configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics = ServerMetrics(),
    inProcessGateway: Bool = false, time: ServerTime = .system, work: BackgroundWork = .untracked, logger: Logger,
    extraRoutes: (Router<ThreadDeskRequestContext>) -> Void = { _ in },
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    onInternalServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    var metrics = metrics
    metrics.labelsApps = configuration.catalog.isShared
    metrics.registerMessageSeries(apps: configuration.catalog.apps.map(\.id))
    let root = ServerRoot(
        configuration: configuration, store: store, metrics: metrics, inProcessGateway: inProcessGateway, time: time, work: work, logger: logger)
    extraRoutes(root.router)
    let (seconds, attoseconds) = configuration.idleTimeout.components
    let idle = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    let migration = StoreMigration(store: store, logger: logger)
    // Each service's stop is timed, and the report (first, so it stops last) says what each took.
    let stops = StopRecord(time: time, drain: root.drain)
    var services: [any Service] = [StopReport(record: stops, logger: logger)] + root.services.map { background in
        let service = background.waitsForSchema ? AfterMigration(service: background.service, migration: migration) : background.service
        return stops.timed(service, name: StopRecord.name(of: background.service))
    }
    if let internalRouter = root.internalRouter, let port = configuration.internalPort {
        // Last in the list, so it stops right after the public server: the daemon's posts get
        // a refused connection (and retry later) rather than a half-stopped service.
        var internalServer = Application(
                router: internalRouter,
                server: .leanHTTP1(
                    configuration: .init(idleTimeout: idle), arrival: configuration.arrival,
                    responder: SplitResponder(responder: internalRouter.buildResponder(), serverName: "ThreadDesk-internal", logger: logger),
                    stop: root.drain),
                configuration: .init(address: .hostname(configuration.internalHost, port: port), serverName: "ThreadDesk-internal"),
                onServerRunning: { channel in await onInternalServerRunning(channel.localAddress?.port ?? 0) },
                logger: logger)
        internalServer.beforeServerStarts { try await migration.beforeServing() }
        services.append(stops.timed(internalServer, name: "internal listener"))
    }
    var application = Application(
        router: root.router,
        server: .leanHTTP1(
            configuration: .init(idleTimeout: idle), arrival: configuration.arrival,
            responder: SplitResponder(responder: root.router.buildResponder(), serverName: "ThreadDesk", logger: logger),
            tasks: metrics.live.connectionTasks, stop: root.drain),
        // A deploy or a network blip brings every open stream back at once: a short listen queue
        // would reset connections the kernel could have held (the system caps it at somaxconn).
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "ThreadDesk", backlog: 4_096),
        services: services,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
    // The store's pool runs as one of the services; the listeners open once the schema is current.
    application.beforeServerStarts { try await migration.beforeServing() }
    return application
}
