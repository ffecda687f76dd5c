import Hummingbird
import Logging
import ThreadDeskStore

extension ServerRoot {
    /// The public router with every route of the API, and the internal one (`INTERNAL_PORT`) for
    /// `/metrics` and the gateway daemon. Each feature registers its own routes; here they are
    /// put on the route groups of the callers who may use them.
    static func routers(
        configuration: ServerConfiguration, store: any UserStore, shared: Shared, features: Features, gatewayHealth: GatewayHealth,
        time: ServerTime, logger: Logger
    ) -> (public: Router<ThreadDeskRequestContext>, internal: Router<ThreadDeskRequestContext>?) {
        let metrics = shared.metrics
        func makeRouter() -> Router<ThreadDeskRequestContext> {
            let router = Router(context: ThreadDeskRequestContext.self)
            // First, so the whole request (logging and error mapping included) runs in the request's
            // own task: a Swift task keeps the memory of its deepest stack until it ends, and the
            // connection's task lives as long as the connection (an event stream: for an hour).
            router.add(middleware: DeadlineMiddleware(timeout: configuration.requestTimeout, drain: shared.drain, waits: shared.waits))
            router.add(middleware: TracingMiddleware(traces: shared.traces))
            router.add(middleware: AccessLogMiddleware())
            router.add(middleware: ErrorMiddleware(metrics: metrics))
            return router
        }
        let router = makeRouter()
        let internalRouter = configuration.internalPort.map { _ in makeRouter() }
        let health = HealthRoutes(store: store, metrics: metrics, discord: shared.discord, gateway: gatewayHealth)
        health.register(on: router)
        if let internalRouter {
            health.registerMetrics(on: internalRouter, token: configuration.metricsToken)
        } else if let token = configuration.metricsToken {
            health.registerMetrics(on: router, token: token)
        }
        if let internalRouter { health.register(on: internalRouter) }
        if let internalRouter {
            StatsRoutes(numbers: features.lifecycle.numbers, catalog: configuration.catalog).register(on: internalRouter, token: configuration.metricsToken)
        } else if let token = configuration.metricsToken {
            StatsRoutes(numbers: features.lifecycle.numbers, catalog: configuration.catalog).register(on: router, token: token)
        }

        let catalog = configuration.catalog
        let v1 = V1Groups(router: router, catalog: catalog, sessions: features.accounts.sessions, quotas: features.quotas, attest: features.accounts.attest)
        SessionRoutes(sessions: features.accounts.sessions, quotas: features.quotas, attest: features.accounts.attest).register(on: v1)
        if let attest = features.accounts.attest { AttestRoutes(attest: attest).register(on: v1) }
        ConversationRoutes(conversation: features.messages.conversation, editor: features.messages.editor, uploads: features.messages.uploads, quotas: features.quotas)
            .register(on: v1)
        DeviceRoutes(devices: features.accounts.devices).register(on: v1)
        ProfileRoutes(profiles: features.accounts.profiles).register(on: v1)
        SupportStatusRoutes(away: features.support.away).register(on: v1)
        SuggestionRoutes(books: features.support.faqBooks).register(on: v1)
        ArticleRoutes(help: HelpCenter(books: features.support.faqBooks, reads: store, time: time)).register(on: v1)
        DiagnosticsRoutes(diagnostics: features.messages.diagnostics, quotas: features.quotas).register(on: v1)
        RatingRoutes(ratings: features.lifecycle.ratings, quotas: features.quotas).register(on: v1)
        CrashRoutes(crashes: features.messages.crashes, quotas: features.quotas, largeBodies: features.messages.diagnostics.largeBodies).register(on: v1)
        LiveRoutes(
            live: features.streaming.live, users: store, quotas: features.quotas, timeout: configuration.requestTimeout, metrics: metrics,
            logger: logger
        ).register(on: v1)
        AttachmentRoutes(attachments: features.messages.attachments, quotas: features.quotas).register(on: v1)
        PrivacyRoutes(eraser: features.privacy.eraser, exporter: features.privacy.exporter, metrics: metrics).register(on: v1)
        if catalog.legacyRoutes {
            LegacyRoutes(
                legacy: features.messages.legacy, conversation: features.messages.conversation, devices: features.accounts.devices, diagnostics: features.messages.diagnostics,
                quotas: features.quotas, catalog: catalog
            ).register(on: router)
        }
        if let secret = configuration.gatewaySecret {
            InternalRoutes(events: features.support.gatewayEvents, secret: secret, metrics: metrics, logger: logger)
                .register(on: internalRouter ?? router)
        }
        if let secret = configuration.crashes.dsymsSecret {
            DSYMRoutes(library: features.messages.dsyms, catalog: catalog, secret: secret).register(on: internalRouter ?? router)
        }
        return (router, internalRouter)
    }
}
