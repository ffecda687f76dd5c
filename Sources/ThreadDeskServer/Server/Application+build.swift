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
    let parts = ServerParts(
        configuration: configuration, store: store, metrics: metrics, inProcessGateway: inProcessGateway, time: time, work: work, logger: logger)
    extraRoutes(parts.router)
    let (seconds, attoseconds) = configuration.idleTimeout.components
    let idle = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    let migration = StoreMigration(store: store, logger: logger)
    // The store's pool and the APNs connections run from the start; the rest waits for the schema.
    var services = parts.services.map { service in
        service is any UserStore || service is PushSender || service is WaitWatchdog
            ? service : AfterMigration(service: service, migration: migration)
    }
    if let internalRouter = parts.internalRouter, let port = configuration.internalPort {
        // Last in the list, so it stops right after the public server: the daemon's posts get
        // a refused connection (and retry later) rather than a half-stopped service.
        var internalServer = Application(
                router: internalRouter,
                server: .leanHTTP1(
                    configuration: .init(idleTimeout: idle), arrival: configuration.arrival,
                    responder: SplitResponder(responder: internalRouter.buildResponder(), serverName: "ThreadDesk-internal", logger: logger)),
                configuration: .init(address: .hostname(configuration.internalHost, port: port), serverName: "ThreadDesk-internal"),
                onServerRunning: { channel in await onInternalServerRunning(channel.localAddress?.port ?? 0) },
                logger: logger)
        internalServer.beforeServerStarts { try await migration.beforeServing() }
        services.append(internalServer)
    }
    var application = Application(
        router: parts.router,
        server: .leanHTTP1(
            configuration: .init(idleTimeout: idle), arrival: configuration.arrival,
            responder: SplitResponder(responder: parts.router.buildResponder(), serverName: "ThreadDesk", logger: logger)),
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

/// The router with every public route, the internal one (with `INTERNAL_PORT`), and the
/// services that run beside them.
struct ServerParts {
    let router: Router<ThreadDeskRequestContext>
    /// `/metrics` and the gateway daemon's route, when they are kept off the public listener.
    let internalRouter: Router<ThreadDeskRequestContext>?
    let services: [any Service]

    init(
        configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics, inProcessGateway: Bool, time: ServerTime,
        work: BackgroundWork = .untracked, logger: Logger
    ) {
        var discordConfiguration = DiscordClient<AnyClock>.Configuration(
            baseURL: configuration.discordAPIURL, token: configuration.discordToken)
        discordConfiguration.budget = configuration.discordBudget
        discordConfiguration.observer = { route, status in metrics.discord(route: route, status: status) }
        discordConfiguration.rateLimits.globalLimit = configuration.discordGlobalLimit
        discordConfiguration.rateLimits.globalWindow = configuration.discordGlobalWindow
        // A store that replicas share (the one with a bus between them) keeps the turns on the
        // buckets they all spend; with an embedded store this process is the bot's only one.
        if store is any LiveBus { discordConfiguration.sharedTurns = SharedDiscordTurns(store: store) }
        let discord = DiscordClient(configuration: discordConfiguration, on: time.clock, logger: logger)
        let apns = configuration.apns.flatMap { settings in
            do {
                return try PushSender(settings: settings, logger: logger)
            } catch {
                logger.error("APNs key unusable; pushes are off", metadata: ["error": "\(error)"])
                return nil
            }
        }
        let waits = configuration.debugWaitThreshold.map { _ in WaitTracker() }
        let parts = Components(
            configuration: configuration, store: store, discord: discord, apns: apns, metrics: metrics, waits: waits, logger: logger, time: time, work: work)

        // In-flight requests get most of the shutdown grace; the last second is for their answers.
        let drain = max(configuration.shutdownGrace / 2, configuration.shutdownGrace - .seconds(1))
        func makeRouter() -> Router<ThreadDeskRequestContext> {
            let router = Router(context: ThreadDeskRequestContext.self)
            // First, so the whole request (logging and error mapping included) runs in the request's
            // own task: a Swift task keeps the memory of its deepest stack until it ends, and the
            // connection's task lives as long as the connection (an event stream: for an hour).
            router.add(middleware: DeadlineMiddleware(timeout: configuration.requestTimeout, drain: drain, waits: waits, time: time))
            router.add(middleware: AccessLogMiddleware())
            router.add(middleware: ErrorMiddleware(metrics: metrics))
            return router
        }
        let router = makeRouter()
        let internalRouter = configuration.internalPort.map { _ in makeRouter() }
        let gatewayHealth = GatewayHealth()
        let health = HealthRoutes(store: store, metrics: metrics, discord: discord, gateway: gatewayHealth)
        health.register(on: router)
        health.registerMetrics(on: internalRouter ?? router)
        if let internalRouter { health.register(on: internalRouter) }

        let v1 = V1Groups(router: router, appKey: configuration.appKey, sessions: parts.sessions, quotas: parts.quotas, attest: parts.attest)
        SessionRoutes(sessions: parts.sessions, quotas: parts.quotas, attest: parts.attest).register(on: v1)
        if let attest = parts.attest { AttestRoutes(attest: attest).register(on: v1) }
        ConversationRoutes(conversation: parts.conversation, editor: parts.editor, uploads: parts.uploads, quotas: parts.quotas).register(on: v1)
        DeviceRoutes(devices: parts.devices).register(on: v1)
        SupportStatusRoutes(away: parts.away).register(on: v1)
        SuggestionRoutes(book: parts.faq).register(on: v1)
        DiagnosticsRoutes(diagnostics: parts.diagnostics, quotas: parts.quotas).register(on: v1)
        LiveRoutes(
            live: parts.live, users: store, quotas: parts.quotas, timeout: configuration.requestTimeout, metrics: metrics, logger: logger
        ).register(on: v1)
        AttachmentRoutes(attachments: parts.attachments, quotas: parts.quotas).register(on: v1)
        PrivacyRoutes(eraser: parts.eraser, exporter: parts.exporter, metrics: metrics).register(on: v1)
        if let key = configuration.legacyAPIKey {
            LegacyRoutes(
                legacy: parts.legacy, conversation: parts.conversation, devices: parts.devices, diagnostics: parts.diagnostics,
                quotas: parts.quotas, apiKey: key
            ).register(on: router)
        }
        if let secret = configuration.gatewaySecret {
            InternalRoutes(events: parts.gatewayEvents, secret: secret, metrics: metrics, logger: logger).register(on: internalRouter ?? router)
        }
        var services = parts.services
        if inProcessGateway {
            var gateway = GatewayConnection.Configuration(
                token: configuration.discordToken, forumChannelID: configuration.forumChannelID, discordAPIURL: configuration.discordAPIURL)
            gateway.backoffBase = configuration.gatewayBackoffBase
            gateway.compression = configuration.gatewayCompression
            gateway.faqChannelID = configuration.faqChannelID
            services.append(
                InProcessGateway(
                    // One Discord client per process: the gateway's REST calls share the API's budget.
                    connection: GatewayConnection(
                        configuration: gateway, sink: parts.gatewayEvents, discord: discord, logger: logger,
                        handedOver: { work.handedOver(session: $0, sequence: $1) }),
                    health: gatewayHealth, logger: logger))
        }
        self.router = router
        self.internalRouter = internalRouter
        self.services = services
    }
}
