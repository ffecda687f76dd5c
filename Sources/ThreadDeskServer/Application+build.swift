import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ThreadDeskStore

/// The store named by `STORE_URL`: `sqlite://path` (relative or absolute) or `memory://`.
public func makeStore(url: String, logger: Logger) throws -> any UserStore {
    if url.hasPrefix("sqlite://") {
        return try SQLiteStore(path: String(url.dropFirst("sqlite://".count)), logger: logger)
    }
    if url == "memory://" { return MemoryStore() }
    throw ServerConfiguration.Problem(missing: [], invalid: ["STORE_URL (sqlite://path or memory://)"])
}

/// Builds the whole HTTP application from its configuration; `threaddesk serve`, the sandbox
/// and the tests all start the server through here.
public func buildApplication(
    configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics = ServerMetrics(),
    logger: Logger
) -> some ApplicationProtocol {
    var discordConfiguration = DiscordClient<ContinuousClock>.Configuration(
        baseURL: configuration.discordAPIURL, token: configuration.discordToken)
    discordConfiguration.budget = configuration.discordBudget
    discordConfiguration.observer = { route, status in metrics.discord(route: route, status: status) }
    let discord = DiscordClient(configuration: discordConfiguration, logger: logger)
    let service = SupportService(store: store, discord: discord, configuration: configuration, metrics: metrics, logger: logger)

    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: LogRequestsMiddleware(.info))
    router.add(middleware: ErrorMiddleware(metrics: metrics))
    HealthRoutes(store: store, metrics: metrics).register(on: router)
    V1Routes(service: service).register(on: router)
    if let key = configuration.legacyAPIKey {
        LegacyRoutes(service: service, apiKey: key).register(on: router)
    }
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "ThreadDesk"),
        logger: logger)
}
