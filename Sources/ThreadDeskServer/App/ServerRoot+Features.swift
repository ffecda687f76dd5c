import APNs
import Deadlines
import DiscordREST
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import ThreadDeskCore
import ThreadDeskStore

extension ServerRoot {
    /// Every feature of the server, built once, each given only what it uses. Read top to bottom,
    /// it is the map of who depends on whom: a feature is built after everything it uses.
    struct Features: Sendable {
        // Shared by the features.
        let users: UserSerializer
        let quotas: Quotas
        /// Discord's messages kept in the store, and who listens to what it takes in.
        let mirror: Mirroring
        /// Who users are: sessions, devices, App Attest, what the app says about them.
        let accounts: Accounts
        /// What users send and read: the outbox, the conversation, files, diagnostics, crash reports, the legacy routes.
        let messages: Messages
        /// Live conversation: event streams, typing, read receipts.
        let streaming: Streaming
        /// A user's data: erasure and export.
        let privacy: Privacy
        /// What support does in Discord, and the gateway's events that reach all of the above.
        let support: Support
        /// Signed webhooks: the events recorded, and their delivery.
        let webhooks: Webhooks
        /// Conversations' course: closes (now, scheduled, automatic), reminders, ratings, numbers.
        let lifecycle: Lifecycle

        /// - Parameter work: Told of the background work as it comes and goes (the tests' settled signal).
        init(configuration: ServerConfiguration, store: any UserStore, shared: Shared, logger: Logger, time: ServerTime, work: BackgroundWork) {
            let (discord, metrics, now) = (shared.discord, shared.metrics, time.now)
            let catalog = configuration.catalog
            let settings = configuration.live
            let bot = BotIdentity(discord: discord)
            // Reserved per app with answers while away: the mirror tells them by it, and no agent speaks under it.
            let assistantNames = catalog.apps.compactMap { app in configuration.assist.assistantName(for: app).map { (app: app, name: $0) } }
            users = UserSerializer(store: store, metrics: metrics, logger: logger, threadRecorded: ThreadNotes.unrecordedThreadKey)
            quotas = Quotas(
                store: store, settings: configuration.quotas,
                addresses: ClientAddressRule(
                    trustedProxies: configuration.trustedProxies.compactMap(IPNetwork.init), ipv6PrefixBits: configuration.quotaIPv6PrefixBits),
                metrics: metrics, attestMode: configuration.attest.mode, threadShares: catalog.threadShares)

            // The mirror first: every feature that takes in what Discord says goes through it, and
            // it tells its listeners (streams, pushes, status tags) what it took in.
            let feed = FeedState(store: store, staleAfter: configuration.mirror.feedStaleAfter, now: now)
            let hub = LiveHub(
                settings: .init(
                    keepAlive: settings.keepAlive, writeTimeout: settings.writeTimeout, maxDuration: settings.maxStreamDuration,
                    maxStreams: settings.maxStreams, streamsPerUser: settings.streamsPerUser, streamsPerAddress: settings.streamsPerAddress,
                    streamShares: catalog.streamShares),
                bus: store.bus, metrics: metrics, logger: logger, time: time, traces: shared.traces, drain: shared.drain,
                work: work)
            let pushes = shared.apns.map {
                PushDispatcher(
                    store: store, apns: $0, settings: configuration.push, catalog: catalog, metrics: metrics, logger: logger, time: time,
                    traces: shared.traces, work: work)
            }
            let status = configuration.statusTags.map {
                StatusTags(
                    names: $0, discord: discord, store: store, feed: feed, catalog: catalog, logger: logger, time: time,
                    work: work)
            }
            // The assistant, when an app has it on: it hears who spoke last in each thread.
            let assist = AssistService(
                settings: configuration.assist, catalog: catalog, httpClient: { shared.assistClient.client }, ledger: store, metrics: metrics,
                logger: logger, time: time)
            let replyWatch = assist.map { _ in ReplyWatch(catalog: catalog, assist: configuration.assist, work: work, now: now) }
            let listeners: [(any MirrorListener)?] = [hub, pushes, status, replyWatch]
            let pushRule = shared.apns.map { _ in PushRule(maxAge: configuration.push.maxAge, background: configuration.push.background) }
            // Signed webhooks: what the conversation does, recorded with it (`record(_:app:owner:data:at:in:)`).
            let webhookEvents = WebhookEvents(
                catalog: catalog, store: store, recorded: users.webhooksRecorded, metrics: metrics, logger: logger, now: now)
            // Each conversation's course, kept as its messages enter the mirror.
            let lifecycleSignals = LifecycleSignals()
            let conversationLog = ConversationLog(
                store: store, catalog: catalog, teamName: configuration.desk.speakerName(nil), signals: lifecycleSignals, webhooks: webhookEvents, logger: logger,
                now: now)
            var ingestion = MirrorIngestion(
                store: store, bot: bot, assistantNames: Dictionary(assistantNames.map { ($0.app.id, $0.name) }, uniquingKeysWith: { first, _ in first }), pushRule: pushRule, listeners: listeners.compactMap { $0 },
                recorders: [conversationLog, ReadsBeforeMessages(store: store, logger: logger, now: now)], now: now)
            ingestion.shownChanges = webhookEvents
            let sync = MirrorSync(store: store, discord: discord, bot: bot, feed: feed, ingestion: ingestion, logger: logger)
            let ingestionQueue = IngestionQueue(work: work)
            let reconciliations = CatchUpGate(work: work)
            let reconciler = Reconciler(
                store: store, discord: discord, feed: feed, sync: sync, catalog: catalog, settings: configuration.mirror, metrics: metrics, logger: logger, time: time)

            // Threads, and what users do in them.
            let threads = ThreadService(
                store: store, discord: discord, bot: bot, feed: feed, ingestion: ingestion, status: status, quotas: quotas,
                catalog: catalog, metrics: metrics, logger: logger, now: now)
            let voice = SupportVoice(
                discord: discord, locks: store, settings: configuration.desk, assistantNames: Dictionary(assistantNames.map { ($0.app.forumChannelID, $0.name) }, uniquingKeysWith: { first, _ in first }), logger: logger)
            let away = SupportAvailability(settings: configuration.desk, catalog: catalog, store: store, voice: voice, ingestion: ingestion, status: status, logger: logger, now: now)
            // Each app's FAQ forum, in its app's guild, and the book its users' suggestions come from.
            let mirrors = catalog.apps.compactMap { app in
                app.faqChannelID.map { forum in
                    FAQMirror(
                        book: FAQBook(),
                        authors: FAQAuthors(
                            discord: discord, bot: bot, guildID: app.guildID, forumID: forum, access: DeskAccess(configuration.desk), time: time),
                        discord: discord, guildID: app.guildID, forumID: forum, logger: logger, time: time, bus: store.bus, store: store, work: work,
                        app: app.id)
                }
            }
            let faq = FAQForums(mirrors, discord: discord, logger: logger)
            let faqBooks = FAQShelf(Dictionary(mirrors.map { ($0.app, $0.book) }, uniquingKeysWith: { first, _ in first }))
            // Their first reads are due.
            for mirror in mirrors { work.raise(mirror.workName) }
            let attest = configuration.attest.mode == .off ? nil : AttestService(settings: configuration.attest, catalog: catalog, store: store, metrics: metrics, now: now)
            let devices = DeviceService(users: users, discord: discord, ingestion: ingestion, now: now)
            let useNotes = TokenUseNotes(
                users: users, store: store, settings: configuration.sessions, timeout: configuration.requestTimeout, logger: logger, work: work)
            let sessions = SessionService(
                users: users, store: store, devices: devices, live: hub, catalog: catalog, settings: configuration.sessions, useNotes: useNotes,
                now: now)
            let messageIDs = MessageIDs()
            // Crash reports: read with the app's dSYMs; their notes' follow-ups ride on the outbox.
            let crashSymbols = CrashSymbols(
                store: store, symbolizer: configuration.crashes.symbolizerPath.map { Symbolizer(path: $0) },
                cache: URL(fileURLWithPath: configuration.crashes.cacheDirectory, isDirectory: true), logger: logger)
            let crashRegrouping = CrashRegrouping(store: store, symbols: crashSymbols, discord: discord, metrics: metrics, now: now)
            let crashFollowUps = CrashFollowUps(
                store: store, regrouping: crashRegrouping, voice: voice, ingestion: ingestion, catalog: catalog, status: status, settings: configuration.crashes, metrics: metrics,
                logger: logger)
            let outbox = OutboxDelivery(
                store: store, users: users, threads: threads, ingestion: ingestion, away: away, faq: faqBooks, settings: configuration.outbox,
                ids: messageIDs, metrics: metrics, logger: logger, time: time, waits: shared.waits, traces: shared.traces, work: work,
                notes: crashFollowUps, stop: shared.drain)
            let intake = OutboxIntake(
                store: store, threads: threads, ingestion: ingestion, outbox: outbox, ids: messageIDs, settings: configuration.outbox,
                traces: shared.traces, now: now)
            let conversation = ConversationService(users: users, store: store, sync: sync, intake: intake, metrics: metrics)
            let editor = MessageEditor(users: users, store: store, discord: discord, sync: sync, ingestion: ingestion, outbox: outbox, now: now)
            // One large body at a time per user and network, upload or diagnostics.
            let largeBodyHolders = SlotHolders()
            let diagnostics = DiagnosticsService(
                largeBodies: ConcurrencyGate(limit: Request.largeBodiesAtOnce, holders: largeBodyHolders), users: users, intake: intake,
                metrics: metrics, now: now)
            let crashes = CrashService(
                users: users, store: store, symbols: crashSymbols, intake: intake, ids: messageIDs, webhooks: webhookEvents, metrics: metrics,
                logger: logger, now: now)
            let dsyms = DSYMLibrary(
                store: store, users: users, symbols: crashSymbols, regrouping: crashRegrouping, settings: configuration.crashes, metrics: metrics,
                logger: logger, now: now)
            let legacy = LegacyService(users: users, store: store, sync: sync, bot: bot, now: now)
            let typing = TypingRelay(discord: discord, timeout: settings.typingInterval, metrics: metrics, logger: logger, work: work)
            let receipts = settings.readReceiptEmoji.map {
                ReadReceipts(
                    store: store, discord: discord, emoji: $0, delay: settings.readReceiptDelay, timeout: configuration.requestTimeout,
                    logger: logger, time: time, work: work)
            }
            let live = LiveService(
                users: users, store: store, discord: discord, bot: bot, ingestion: ingestion, hub: hub, feed: LiveFeed(store: store),
                typingGate: TypingGate(interval: settings.typingInterval, time: time),
                openings: StreamOpenings(settings: settings, requestTimeout: configuration.requestTimeout, time: time, metrics: metrics), typing: typing, receipts: receipts, settings: settings,
                metrics: metrics, logger: logger, now: now)
            let uploads = UploadReader(settings: configuration.attachments, holders: largeBodyHolders, metrics: metrics)
            let attachments = AttachmentProxy(
                store: store, discord: discord, cdn: DiscordCDN(apiBaseURL: configuration.discordAPIURL, httpClient: { shared.cdnClient.client }), metrics: metrics, logger: logger, now: now, faq: faqBooks)
            let eraser = UserEraser(
                store: store, discord: discord, deletion: configuration.privacy.deletion, hub: hub, status: status,
                unrecorded: threads.unrecorded, metrics: metrics, logger: logger, time: time)
            let exporter = DataExporter(store: store, sync: sync, now: now)

            // What support does in Discord, and the gateway's events that reach all of the above.
            let drafts: Drafts?
            if let assist, let replyWatch {
                drafts = Drafts(
                    .init(
                        users: users, store: store, discord: discord, ingestion: ingestion, voice: voice, away: away, faq: faqBooks, assist: assist,
                        watch: replyWatch, catalog: catalog, desk: configuration.desk, ids: messageIDs, logger: logger, time: time), work: work,
                    drain: shared.drain)
            } else {
                drafts = nil
            }
            // Closing conversations, the timers of waits and closes, ratings and support's numbers.
            let closing = ConversationClosing(
                users: users, store: store, discord: discord, voice: voice, ingestion: ingestion, status: status, hub: hub, pushes: pushes,
                catalog: catalog, settings: configuration.lifecycle, signals: lifecycleSignals, webhooks: webhookEvents, metrics: metrics,
                logger: logger, time: time)
            let timers = ConversationTimers(
                store: store, closing: closing,
                reminders: ConversationReminders(
                    store: store, discord: discord, catalog: catalog, roleID: configuration.desk.roleID, metrics: metrics, logger: logger),
                settings: configuration.lifecycle, signals: lifecycleSignals, logger: logger, time: time, work: work)
            let numbers = SupportNumbers(store: store, catalog: catalog, time: time, help: HelpCenter(books: faqBooks, reads: store, time: time))
            let ratings = RatingService(
                users: users, store: store, intake: intake, webhooks: webhookEvents, metrics: metrics, logger: logger, time: time)
            let desk = configuration.desk.commands
                ? Desk(
                    .init(
                        users: users, store: store, discord: discord, ingestion: ingestion, voice: voice, snippets: Snippets(store: store),
                        away: away, status: status, translator: assist.map(Translator.init), settings: configuration.desk, catalog: catalog,
                        logger: logger, time: time, isDraftInteraction: Drafts.isDraftInteraction,
                        books: [CrashCommands(store: store, now: now), StatsCommands(numbers: numbers)], closings: closing), work: work,
                    drain: shared.drain)
                : nil
            let gatewayEvents = GatewayEventHandler(
                users: users, discord: discord, bot: bot, feed: feed, sync: sync, ingestion: ingestion, queue: ingestionQueue,
                reconciliations: reconciliations, live: live, desk: desk, drafts: drafts, faq: faq, status: status, timeout: configuration.requestTimeout,
                waits: shared.waits, traces: shared.traces, logger: logger)
            mirror = Mirroring(feed: feed, ingestion: ingestion, ingestionQueue: ingestionQueue, reconciliations: reconciliations, reconciler: reconciler, hub: hub, pushes: pushes, status: status)
            accounts = Accounts(
                attest: attest, sessions: sessions, useNotes: useNotes, devices: devices,
                profiles: ProfileService(users: users, store: store, webhooks: webhookEvents, now: now))
            messages = Messages(
                outbox: outbox, conversation: conversation, editor: editor, diagnostics: diagnostics, crashes: crashes, dsyms: dsyms, uploads: uploads,
                attachments: attachments, legacy: legacy)
            streaming = Streaming(live: live, typing: typing, receipts: receipts)
            privacy = Privacy(eraser: eraser, exporter: exporter)
            support = Support(away: away, desk: desk, drafts: drafts, faq: faq, faqBooks: faqBooks, gatewayEvents: gatewayEvents)
            webhooks = Webhooks(
                events: webhookEvents,
                dispatcher: webhookEvents.isOn
                    ? WebhookDispatcher(
                        store: store, catalog: catalog, settings: configuration.webhooks, httpClient: { shared.webhookClient.client },
                        wakeUps: users.webhooksRecorded, metrics: metrics, logger: logger, time: time, work: work, stop: shared.drain)
                    : nil)
            lifecycle = Lifecycle(closing: closing, timers: timers, ratings: ratings, numbers: numbers)
        }
    }
}

extension ServerRoot.Features {
    struct Mirroring: Sendable {
        let feed: FeedState
        let ingestion: MirrorIngestion
        let ingestionQueue: IngestionQueue
        let reconciliations: CatchUpGate
        let reconciler: Reconciler
        let hub: LiveHub
        let pushes: PushDispatcher?
        /// Nil when status tags are off.
        let status: StatusTags?
    }

    struct Accounts: Sendable {
        /// App Attest; nil when `APP_ATTEST=off`.
        let attest: AttestService?
        let sessions: SessionService
        /// Notes tokens' uses beside the requests that must not wait for it (stream openings).
        let useNotes: TokenUseNotes
        let devices: DeviceService
        /// What the app says about its users: attributes and activity.
        let profiles: ProfileService
    }

    struct Messages: Sendable {
        /// Delivers what users send into Discord.
        let outbox: OutboxDelivery
        let conversation: ConversationService
        let editor: MessageEditor
        let diagnostics: DiagnosticsService
        let crashes: CrashService
        let dsyms: DSYMLibrary
        let uploads: UploadReader
        let attachments: AttachmentProxy
        let legacy: LegacyService
    }

    struct Streaming: Sendable {
        let live: LiveService
        let typing: TypingRelay
        let receipts: ReadReceipts?
    }

    struct Privacy: Sendable {
        let eraser: UserEraser
        let exporter: DataExporter
    }

    struct Lifecycle: Sendable {
        let closing: ConversationClosing
        let timers: ConversationTimers
        let ratings: RatingService
        let numbers: SupportNumbers
    }

    struct Webhooks: Sendable {
        let events: WebhookEvents
        /// Nil when no app has a webhook.
        let dispatcher: WebhookDispatcher?
    }

    struct Support: Sendable {
        let away: SupportAvailability
        /// The desk's slash commands; nil when `DESK_COMMANDS=off`.
        let desk: Desk?
        /// Drafted answers and their buttons; nil when no app has the assistant on.
        let drafts: Drafts?
        /// Every app's forum of curated answers (`DISCORD_FAQ_CHANNEL_ID`, or `faqChannelID` per app).
        let faq: FAQForums
        /// Each app's curated answers.
        let faqBooks: FAQShelf
        let gatewayEvents: GatewayEventHandler
    }
}

