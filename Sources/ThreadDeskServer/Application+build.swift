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
public func makeStore(url: String, logger: Logger) throws -> any UserStore {
    if url.hasPrefix("sqlite://") {
        return try SQLiteStore(path: String(url.dropFirst("sqlite://".count)), logger: logger)
    }
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") { return try PostgresStore(url: url, logger: logger) }
    if url == "memory://" { return MemoryStore() }
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
    inProcessGateway: Bool = false, logger: Logger,
    extraRoutes: (Router<ThreadDeskRequestContext>) -> Void = { _ in },
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    onInternalServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let parts = ServerParts(configuration: configuration, store: store, metrics: metrics, inProcessGateway: inProcessGateway, logger: logger)
    extraRoutes(parts.router)
    let (seconds, attoseconds) = configuration.idleTimeout.components
    let idle = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    var services = parts.services
    if let internalRouter = parts.internalRouter, let port = configuration.internalPort {
        // Last in the list, so it stops right after the public server: the daemon's posts get
        // a refused connection (and retry later) rather than a half-stopped service.
        services.append(
            Application(
                router: internalRouter,
                server: .leanHTTP1(configuration: .init(idleTimeout: idle)),
                configuration: .init(address: .hostname(configuration.internalHost, port: port), serverName: "ThreadDesk-internal"),
                onServerRunning: { channel in await onInternalServerRunning(channel.localAddress?.port ?? 0) },
                logger: logger))
    }
    return Application(
        router: parts.router,
        server: .leanHTTP1(configuration: .init(idleTimeout: idle)),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "ThreadDesk"),
        services: services,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
}

/// The router with every public route, the internal one (with `INTERNAL_PORT`), and the
/// services that run beside them.
struct ServerParts {
    let router: Router<ThreadDeskRequestContext>
    /// `/metrics` and the gateway daemon's route, when they are kept off the public listener.
    let internalRouter: Router<ThreadDeskRequestContext>?
    let services: [any Service]

    init(configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics, inProcessGateway: Bool, logger: Logger) {
        var discordConfiguration = DiscordClient<ContinuousClock>.Configuration(
            baseURL: configuration.discordAPIURL, token: configuration.discordToken)
        discordConfiguration.budget = configuration.discordBudget
        discordConfiguration.observer = { route, status in metrics.discord(route: route, status: status) }
        discordConfiguration.rateLimits.globalLimit = configuration.discordGlobalLimit
        let discord = DiscordClient(configuration: discordConfiguration, logger: logger)
        let apns = configuration.apns.flatMap { settings in
            do {
                return try PushSender(settings: settings, logger: logger)
            } catch {
                logger.error("APNs key unusable; pushes are off", metadata: ["error": "\(error)"])
                return nil
            }
        }
        let waits = configuration.debugWaitThreshold.map { _ in WaitTracker() }
        let service = SupportService(
            store: store, discord: discord, configuration: configuration, apns: apns, metrics: metrics, waits: waits, logger: logger)

        // In-flight requests get most of the shutdown grace; the last second is for their answers.
        let drain = max(configuration.shutdownGrace / 2, configuration.shutdownGrace - .seconds(1))
        func makeRouter() -> Router<ThreadDeskRequestContext> {
            let router = Router(context: ThreadDeskRequestContext.self)
            // First, so the whole request (logging and error mapping included) runs in the request's
            // own task: a Swift task keeps the memory of its deepest stack until it ends, and the
            // connection's task lives as long as the connection (an event stream: for an hour).
            router.add(middleware: DeadlineMiddleware(timeout: configuration.requestTimeout, drain: drain, waits: waits))
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
        V1Routes(service: service).register(on: router)
        if let key = configuration.legacyAPIKey {
            LegacyRoutes(service: service, apiKey: key).register(on: router)
        }
        if let secret = configuration.gatewaySecret {
            InternalRoutes(service: service, secret: secret).register(on: internalRouter ?? router)
        }
        var services: [any Service] = service.services
        // A store with a connection pool to run (PostgreSQL) runs beside the server.
        if let storeService = store as? any Service { services.insert(storeService, at: 0) }
        // Services shut down last to first: the APNs connections close after the pushers stopped.
        if let apns { services.insert(apns, at: store is any Service ? 1 : 0) }
        if let waits, let threshold = configuration.debugWaitThreshold {
            services.append(WaitWatchdog(tracker: waits, threshold: threshold, logger: logger))
        }
        if inProcessGateway {
            var gateway = GatewayConnection.Configuration(
                token: configuration.discordToken, forumChannelID: configuration.forumChannelID, discordAPIURL: configuration.discordAPIURL)
            gateway.backoffBase = configuration.gatewayBackoffBase
            gateway.compression = configuration.gatewayCompression
            services.append(
                InProcessGateway(
                    // One Discord client per process: the gateway's REST calls share the API's budget.
                    connection: GatewayConnection(configuration: gateway, sink: service, discord: discord, logger: logger),
                    health: gatewayHealth, logger: logger))
        }
        self.router = router
        self.internalRouter = internalRouter
        self.services = services
    }
}
