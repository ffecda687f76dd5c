import AsyncHTTPClient
import Deadlines
import DiscordGateway
import DiscordREST
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskStore
import ThreadDeskTracing

/// The composition root: the whole server built from its configuration in one place, read top to
/// bottom. `Shared` holds the outside connections (Discord, its CDN, APNs); `Features` every
/// feature, each given only what it uses; the routers put the features' routes on the listeners;
/// `services` lists, in start order, what runs beside the listeners and whether it waits for the
/// store's schema. Nothing is found by its type at run time.
struct ServerRoot {
    /// A long-running part of the server, and whether it starts only once the store's schema is
    /// current (everything that reads or writes the store does).
    struct Background {
        let service: any Service
        let waitsForSchema: Bool
    }

    /// The connections every feature shares, and their owners' clean-up.
    struct Shared: Sendable {
        let metrics: ServerMetrics
        /// One Discord client per process: the API, the background work and the gateway share its
        /// rate limits and budget.
        let discord: DiscordClient<AnyClock>
        /// The HTTP client of attachment downloads, shut down as the server stops.
        let cdnClient: HTTPClientLifetime
        /// The HTTP client the assistant's providers are asked through (made at its first use).
        let assistClient: HTTPClientLifetime
        /// The HTTP client webhooks are posted with (made at its first use).
        let webhookClient: HTTPClientLifetime
        /// Nil without APNs settings, or with a key that does not load (pushes are off then).
        let apns: PushSender?
        /// Present with `DEBUG_WAIT_THRESHOLD`: every wait on Discord and the store is tracked.
        let waits: WaitTracker?
        /// Spans (`TRACING=otlp`), and the exporter that sends them, run beside the rest.
        let traces: Traces
        let traceExporter: (any Service)?
        /// The stop's drain, shared by the requests, slash commands and draft clicks under way.
        let drain: ShutdownDrain

        init(configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics, time: ServerTime, logger: Logger) {
            self.metrics = metrics
            drain = ShutdownDrain(configuration.shutdownDrain, time: time)
            var discordConfiguration = DiscordClient<AnyClock>.Configuration(
                baseURL: configuration.discordAPIURL, token: configuration.discordToken)
            discordConfiguration.budget = configuration.discordBudget
            discordConfiguration.observer = { route, status in metrics.discord(route: route, status: status) }
            discordConfiguration.rateLimits.globalLimit = configuration.discordGlobalLimit
            discordConfiguration.rateLimits.globalWindow = configuration.discordGlobalWindow
            discordConfiguration.sharedTurnLateness = configuration.discordSharedTurnLateness
            // A store that replicas share (the one with a bus between them) keeps the turns on the
            // buckets they all spend; with an embedded store this process is the bot's only one.
            if store.bus != nil { discordConfiguration.sharedTurns = SharedDiscordTurns(store: store) }
            discord = DiscordClient(configuration: discordConfiguration, on: time.clock, logger: logger)
            cdnClient = HTTPClientLifetime(name: "Discord CDN client", make: DiscordCDN.makeClient)
            assistClient = HTTPClientLifetime(name: "assistant client", make: AssistService.makeHTTPClient)
            webhookClient = HTTPClientLifetime(name: "webhook client", make: WebhookDispatcher.makeHTTPClient)
            apns = configuration.apns.flatMap { settings in
                do {
                    return try PushSender(settings: settings, logger: logger)
                } catch {
                    logger.error("APNs key unusable; pushes are off", metadata: ["error": "\(error)"])
                    return nil
                }
            }
            waits = configuration.debugWaitThreshold.map { _ in WaitTracker() }
            do {
                (traces, traceExporter) = try configuration.tracing.makeTraces(serviceName: "threaddesk", logger: logger)
            } catch {
                logger.error("Tracing could not start; it is off", metadata: ["error": "\(error)"])
                (traces, traceExporter) = (.off, nil)
            }
        }
    }

    let router: Router<ThreadDeskRequestContext>
    /// `/metrics` and the gateway daemon's route, when they are kept off the public listener.
    let internalRouter: Router<ThreadDeskRequestContext>?
    /// In the order they start; they stop in reverse, after the listeners.
    let services: [Background]
    /// The stop's drain, which the listeners begin when they quiesce.
    let drain: ShutdownDrain

    init(
        configuration: ServerConfiguration, store: any UserStore, metrics: ServerMetrics, inProcessGateway: Bool, time: ServerTime,
        work: BackgroundWork = .untracked, logger: Logger
    ) {
        let shared = Shared(configuration: configuration, store: store, metrics: metrics, time: time, logger: logger)
        let features = Features(configuration: configuration, store: store, shared: shared, logger: logger, time: time, work: work)
        drain = shared.drain
        let gatewayHealth = GatewayHealth()
        (router, internalRouter) = Self.routers(configuration: configuration, store: store, shared: shared, features: features, gatewayHealth: gatewayHealth, time: time, logger: logger)

        let retention = configuration.privacy.retention.map { retention in
            RetentionService(
                store: store, eraser: features.privacy.eraser, retention: retention, interval: configuration.privacy.retentionInterval,
                metrics: metrics, logger: logger, time: time, work: work)
        }
        let watchdog = shared.waits.flatMap { waits in
            configuration.debugWaitThreshold.map { WaitWatchdog(tracker: waits, threshold: $0, logger: logger, time: time) }
        }
        let gateway = inProcessGateway
            ? Self.gateway(configuration: configuration, shared: shared, features: features, health: gatewayHealth, work: work, logger: logger) : nil
        // In start order by stage (`StopStage`: the stop's sequence, and why, is written there);
        // they stop in reverse, after the listeners.
        var list: [(stage: StopStage, service: (any Service)?, waitsForSchema: Bool)] = [
            (.telemetry, shared.traceExporter, false),
            // The pool closes once its connections are back: until the drain is over and half a
            // second more at most, so the process is out within its grace.
            (.store, store.lifetime.map { StopWithin(service: $0, limit: { shared.drain.left + .milliseconds(500) }, time: time, logger: logger) }, false),
            (.connections, shared.cdnClient, false),
            (.connections, shared.assistClient, false),
            (.connections, shared.webhookClient, false),
            (.connections, shared.apns, false),
            (.features, features.mirror.ingestionQueue, true),
            (
                .features,
                ReconciliationService(
                    gate: features.mirror.reconciliations, feed: features.mirror.feed, reconciler: features.mirror.reconciler,
                    interval: configuration.mirror.reconcileInterval, waits: shared.waits, logger: logger, time: time), true
            ),
            (.features, features.mirror.hub, true),
            (.features, features.streaming.typing, true),
            (.features, features.accounts.useNotes, true),
            (.features, IdempotencyPruner(store: store, retention: configuration.idempotencyRetention, logger: logger, time: time, work: work), true),
            (.features, retention, true),
            (.features, features.messages.outbox, true),
            (.features, FailedFilesExpiry(files: features.messages.outbox.failedFiles, users: features.users, logger: logger, time: time, work: work), true),
            (.features, features.mirror.pushes, true),
            (.features, features.webhooks.dispatcher, true),
            (.features, features.streaming.receipts, true),
            (.features, features.mirror.status, true),
            (.features, features.lifecycle.timers, true),
            (.features, watchdog, false),
            (.gateway, gateway, true),
            (.agentWork, features.support.desk, true),
            (.agentWork, features.support.drafts, true),
            (.drainStart, ShutdownDrainStart(drain: shared.drain), false),
        ]
        for mirror in features.support.faq.mirrors { list.append((.faqMirrors, mirror, true)) }
        services = StopStage.ordered(list.compactMap { entry in
            entry.service.map { (entry.stage, Background(service: $0, waitsForSchema: entry.waitsForSchema)) }
        })
    }

    /// `serve --gateway`: the Discord gateway in this process, handing its events straight to the
    /// features (no internal route between them).
    private static func gateway(
        configuration: ServerConfiguration, shared: Shared, features: Features, health: GatewayHealth, work: BackgroundWork, logger: Logger
    ) -> InProcessGateway {
        var gateway = GatewayConnection.Configuration(
            token: configuration.discordToken, forumChannelIDs: configuration.catalog.forums, discordAPIURL: configuration.discordAPIURL)
        gateway.backoffBase = configuration.gatewayBackoffBase
        gateway.compression = configuration.gatewayCompression
        gateway.faqChannelIDs = configuration.catalog.faqForums
        return InProcessGateway(
            // One Discord client per process: the gateway's REST calls share the API's budget.
            connection: GatewayConnection(
                configuration: gateway, sink: features.support.gatewayEvents, discord: shared.discord, logger: logger,
                handedOver: { work.handedOver(session: $0, sequence: $1) }),
            health: health, logger: logger)
    }
}

/// An HTTP client owned by the server: made on first use, and shut down (with a deadline) when
/// the server stops. A root built but never run (a test of its routes) makes none.
final class HTTPClientLifetime: Service, Sendable, CustomStringConvertible {
    private let make: @Sendable () -> HTTPClient
    private let made = Mutex<HTTPClient?>(nil)
    let description: String

    init(name: String, make: @escaping @Sendable () -> HTTPClient) {
        (self.description, self.make) = (name, make)
    }

    /// The client; after the server stopped, the one shut down (its requests fail at once).
    var client: HTTPClient {
        made.withLock { made in
            if let made { return made }
            let client = make()
            made = client
            return client
        }
    }

    func run() async throws {
        try? await gracefulShutdown()
        // Requests still under way were given the listeners' drain; what is left is cut short.
        guard let client = made.withLock({ $0 }) else { return }
        do {
            try await Deadline.within(.seconds(5)) { try await client.shutdown() }
        } catch {
            Logger(label: "threaddesk").notice("An HTTP client did not shut down cleanly", metadata: ["client": "\(description)", "error": "\(error)"])
        }
    }
}
