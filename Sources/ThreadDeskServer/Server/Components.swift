import ThreadDeskCore
import APNs
import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskStore

/// Everything the server is made of, built once from its configuration: the services by job,
/// the collaborators they share, and what runs beside the HTTP server. The composition root:
/// no service builds another.
struct Components: Sendable {
    let quotas: Quotas
    /// App Attest; nil when `APP_ATTEST=off`.
    let attest: AttestService?
    let sessions: SessionService
    let devices: DeviceService
    let conversation: ConversationService
    let editor: MessageEditor
    let diagnostics: DiagnosticsService
    let live: LiveService
    let legacy: LegacyService
    let gatewayEvents: GatewayEventHandler
    let uploads: UploadReader
    let attachments: AttachmentProxy
    let away: Away
    let eraser: UserEraser
    let exporter: DataExporter
    /// The curated answers; nil without a FAQ forum.
    let faq: FAQBook?

    /// What runs beside the HTTP server, in the order it starts (it stops in reverse).
    let services: [any Service]

    init(
        configuration: ServerConfiguration, store: any UserStore, discord: DiscordClient<AnyClock>, apns: PushSender?,
        metrics: ServerMetrics, waits: WaitTracker?, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked
    ) {
        let now = time.now
        let settings = configuration.live
        let users = UserLock(store: store, metrics: metrics, logger: logger)
        let bot = BotIdentity(discord: discord)
        let feed = FeedState(store: store, staleAfter: configuration.mirror.feedStaleAfter, now: now)
        let pushes = apns.map { PushDispatcher(store: store, apns: $0, settings: configuration.push, metrics: metrics, logger: logger, time: time, work: work) }
        let hub = LiveHub(
            settings: .init(
                keepAlive: settings.keepAlive, writeTimeout: settings.writeTimeout, maxDuration: settings.maxStreamDuration,
                maxStreams: settings.maxStreams, streamsPerUser: settings.streamsPerUser, streamsPerAddress: settings.streamsPerAddress),
            bus: store as? any LiveBus, metrics: metrics, logger: logger)
        let receipts = settings.readReceiptEmoji.map {
            ReadReceipts(
                store: store, discord: discord, emoji: $0, delay: settings.readReceiptDelay, timeout: configuration.requestTimeout, logger: logger,
                time: time, work: work)
        }
        var quotas = Quotas(
            store: store, settings: configuration.quotas,
            addresses: ClientAddressRule(
                trustedProxies: configuration.trustedProxies.compactMap(IPNetwork.init), ipv6PrefixBits: configuration.quotaIPv6PrefixBits),
            metrics: metrics)
        quotas.attestMode = configuration.attest.mode
        attest = configuration.attest.mode == .off ? nil : AttestService(settings: configuration.attest, store: store, metrics: metrics, now: now)
        let typing = TypingRelay(discord: discord, timeout: settings.typingInterval, metrics: metrics, logger: logger, work: work)
        let status = configuration.statusTags.map {
            StatusTags(names: $0, discord: discord, store: store, feed: feed, forumChannelID: configuration.forumChannelID, logger: logger, time: time, work: work)
        }
        let ingestion = MirrorIngestion(store: store, bot: bot, pushes: pushes, push: configuration.push, live: hub, status: status, now: now)
        let voice = SupportVoice(discord: discord, locks: store, forumChannelID: configuration.forumChannelID, settings: configuration.desk, logger: logger)
        let away = Away(settings: configuration.desk, store: store, voice: voice, ingestion: ingestion, status: status, logger: logger, now: now)
        self.away = away
        let sync = MirrorSync(store: store, discord: discord, bot: bot, feed: feed, ingestion: ingestion, logger: logger)
        let threads = ThreadService(
            store: store, discord: discord, bot: bot, feed: feed, ingestion: ingestion, quotas: quotas, guildID: configuration.guildID,
            forumChannelID: configuration.forumChannelID, defaultTagID: configuration.defaultTagID,
            legacyRoutes: configuration.legacyAPIKey != nil, metrics: metrics, logger: logger, now: now)
        let devices = DeviceService(users: users, discord: discord, ingestion: ingestion, now: now)
        let live = LiveService(
            users: users, store: store, discord: discord, bot: bot, ingestion: ingestion, hub: hub, feed: LiveFeed(store: store),
            typingGate: TypingGate(interval: settings.typingInterval, time: time), typing: typing, receipts: receipts, settings: settings, metrics: metrics, logger: logger,
            now: now)
        let reconciliations = CatchUpGate(work: work)
        let ingestionQueue = IngestionQueue(work: work)
        let reconciler = Reconciler(
            store: store, discord: discord, feed: feed, sync: sync, configuration: configuration, metrics: metrics, logger: logger,
            time: time)

        let faqMirror = configuration.faqChannelID.map { forum in
            FAQMirror(
                book: FAQBook(),
                authors: FAQAuthors(
                    discord: discord, bot: bot, guildID: configuration.guildID, forumID: forum, access: DeskAccess(configuration.desk), time: time),
                discord: discord, guildID: configuration.guildID, forumID: forum, logger: logger, time: time,
                bus: store as? any LiveBus, work: work)
        }
        if faqMirror != nil { work.raise(FAQMirror.workName) }  // its first read is due
        faq = faqMirror?.book
        self.quotas = quotas
        self.devices = devices
        self.live = live
        sessions = SessionService(
            users: users, store: store, devices: devices, live: hub, verifier: configuration.identitySecret.map(IdentityVerifier.init(secret:)),
            legacyRoutes: configuration.legacyAPIKey != nil, settings: configuration.sessions, now: now)
        conversation = ConversationService(
            users: users, store: store, threads: threads, ingestion: ingestion, sync: sync, away: away, faq: faqMirror?.book,
            metrics: metrics)
        editor = MessageEditor(users: users, store: store, discord: discord, sync: sync, ingestion: ingestion)
        diagnostics = DiagnosticsService(users: users, discord: discord, threads: threads, ingestion: ingestion, metrics: metrics, now: now)
        legacy = LegacyService(users: users, store: store, sync: sync, now: now)
        let desk = configuration.desk.commands
            ? Desk(
                .init(
                    users: users, store: store, discord: discord, ingestion: ingestion, voice: voice, snippets: Snippets(store: store),
                    away: away, status: status, settings: configuration.desk, guildID: configuration.guildID,
                    identityVerified: configuration.identitySecret != nil, logger: logger, time: time), work: work)
            : nil
        gatewayEvents = GatewayEventHandler(
            users: users, discord: discord, bot: bot, feed: feed, sync: sync, ingestion: ingestion, queue: ingestionQueue,
            reconciliations: reconciliations, live: live, desk: desk, faq: faqMirror, status: status, timeout: configuration.requestTimeout, waits: waits, logger: logger)
        uploads = UploadReader(settings: configuration.attachments, metrics: metrics)
        attachments = AttachmentProxy(
            store: store, discord: discord, cdn: DiscordCDN(apiBaseURL: configuration.discordAPIURL), metrics: metrics, logger: logger,
            now: now, faq: faqMirror?.book)

        eraser = UserEraser(
            store: store, discord: discord, deletion: configuration.privacy.deletion, hub: hub, status: status,
            unrecorded: threads.unrecorded, metrics: metrics, logger: logger)
        exporter = DataExporter(store: store, sync: sync, now: now)

        var services: [any Service] = [
            ingestionQueue,
            ReconciliationService(
                gate: reconciliations, feed: feed, reconciler: reconciler, interval: configuration.mirror.reconcileInterval, waits: waits,
                logger: logger, time: time),
            hub,
            typing,
            IdempotencyPruner(store: store, retention: configuration.idempotencyRetention, logger: logger, time: time, work: work),
        ]
        if let retention = configuration.privacy.retention {
            services.append(
                RetentionService(
                    store: store, eraser: eraser, retention: retention, interval: configuration.privacy.retentionInterval, metrics: metrics,
                    logger: logger, time: time, work: work))
        }
        if let pushes { services.append(pushes) }
        if let receipts { services.append(receipts) }
        if let status { services.append(status) }
        if let desk { services.append(desk) }
        if let faqMirror { services.append(faqMirror) }
        // A store with a connection pool to run (PostgreSQL) starts first and stops last; the APNs
        // connections close after the pushers stopped.
        if let apns { services.insert(apns, at: 0) }
        if let storeService = store as? any Service { services.insert(storeService, at: 0) }
        if let waits, let threshold = configuration.debugWaitThreshold {
            services.append(WaitWatchdog(tracker: waits, threshold: threshold, logger: logger, time: time))
        }
        self.services = services
    }
}
