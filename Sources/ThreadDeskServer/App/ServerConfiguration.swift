@_exported import ThreadDeskSettings
import ThreadDeskCore
import APNs
import Foundation
import ThreadDeskTracing
import Logging
import DiscordGateway

/// Everything `threaddesk serve` needs, read from the environment (and a `.env` file beneath it).
public struct ServerConfiguration: Sendable {
    public var discordToken: String
    public var discordAPIURL = "https://discord.com/api/v10"
    public var guildID: String
    public var forumChannelID: String
    /// The FAQ forum: each post a curated answer for `GET /v1/suggestions` (`DISCORD_FAQ_CHANNEL_ID`).
    public var faqChannelID: String?
    /// Applied when the forum requires a tag; the forum's first tag when not set.
    public var defaultTagID: String?
    /// The forum tags that say where a conversation stands, set as it moves: a user's message,
    /// a support reply, closed (`STATUS_TAGS`, three comma-separated names; `off`: none).
    public var statusTags: StatusTagNames? = StatusTagNames()
    /// The slash commands and the name support speaks under.
    public var desk = DeskSettings()
    public var appKey: String
    /// The apps of `APPS_FILE`; nil: one app, `default`, made of `appKey`, `forumChannelID`,
    /// `faqChannelID`, `defaultTagID`, `guildID`, `identitySecret`, `legacyAPIKey`, the desk's hours
    /// and away message and the APNs topic (see `catalog`). When set, those single-app fields are
    /// not read: each app carries its own.
    public var apps: [AppSettings]?
    public var identitySecret: String?
    public var legacyAPIKey: String?
    public var gatewaySecret: String?
    /// A bearer token `/metrics` asks for (`METRICS_TOKEN`). Without `internalPort`, `/metrics` is
    /// served on the public listener only with it: with several apps it names every app and its traffic.
    public var metricsToken: String?
    public var storeURL = ServerConfiguration.defaultStoreURL
    public static let defaultStoreURL = "sqlite://./data/threaddesk.sqlite"
    public var host = "127.0.0.1"
    public var port = 8080
    /// When set, `/metrics` and the gateway daemon's route are served only on this port, on
    /// `internalHost`, and not on the public one (`INTERNAL_PORT`, `INTERNAL_HOST`). Unset, the
    /// public listener serves `/metrics` only behind `metricsToken`.
    public var internalPort: Int?
    public var internalHost = "127.0.0.1"
    /// This process's share of the bot's global 50 requests per second. Discord counts the limit
    /// per bot, not per machine: with N replicas give each 50/N (`DISCORD_GLOBAL_LIMIT`).
    public var discordGlobalLimit = 50
    /// The window `discordGlobalLimit` counts in: Discord's is a second. (Tests stretch it, with
    /// the emulator's, so a burst's overlap does not depend on how fast the machine is.)
    public var discordGlobalWindow: Duration = .seconds(1)
    /// How much later than its turn on a bucket the replicas share (a forum's new threads) a
    /// request may reach Discord, with the replicas together still under the bucket's limit
    /// (`DISCORD_SHARED_TURN_LATENESS_MS`): each window of turns closes this long before
    /// Discord's, and the next opens this long after, so the replicas reach window / (window +
    /// this) of Discord's pace. Unused on an embedded store (one process).
    public var discordSharedTurnLateness: Duration = .milliseconds(500)
    /// The in-process gateway's transport compression (`GATEWAY_COMPRESSION`).
    public var gatewayCompression = TransportCompression.zlibStream
    public var logLevel: Logger.Level = .info
    /// How long Discord calls may take, retries included, before the API answers 503.
    public var discordBudget: Duration = .seconds(15)
    /// nil: no pushes are sent (replies are still tracked).
    public var apns: APNsSettings?
    public var push = PushSettings()
    public var outbox = OutboxSettings()
    /// OpenTelemetry spans (`TRACING=otlp`), off by default.
    public var tracing = TracingSettings()
    public var mirror = MirrorSettings()
    public var live = LiveSettings()
    public var quotas = QuotaSettings()
    /// App Attest: genuine devices only, limits per device (`APP_ATTEST*`).
    public var attest = AppAttestSettings()
    public var attachments = AttachmentSettings()
    /// Crash reports: the symbolizer, the dSYM uploads, the rule's answer.
    public var crashes = CrashSettings()
    /// How webhooks are delivered (`WEBHOOK_TIMEOUT_SECONDS`).
    public var webhooks = WebhookSettings()
    /// The one app's webhook without `APPS_FILE` (`WEBHOOK_URL`, `WEBHOOK_SECRET_FILE`, `WEBHOOK_EVENTS`).
    public var webhookTargets: [WebhookTarget] = []
    /// Reminders, auto-close and ratings (`REMIND_AFTER_MINUTES`, `AUTO_CLOSE_*`, `RATINGS`).
    public var lifecycle = LifecycleSettings()
    /// Erasing users' data: what becomes of their threads, and the retention of inactive users.
    public var privacy = PrivacySettings()
    /// The assistant: drafted answers and answers while away (`ASSIST_*`), off by default.
    public var assist = AssistSettings()
    /// Sessions: how long an unused token lives (`SESSION_IDLE_DAYS`).
    public var sessions = SessionSettings()
    /// Proxies whose `X-Forwarded-For` is believed for the client's address (exact IPs).
    /// Addresses or networks (`10.0.0.0/8`, `fd00::/8`) of the reverse proxies whose
    /// `X-Forwarded-For` is believed (`TRUSTED_PROXIES`).
    public var trustedProxies: Set<String> = []
    /// How much of an IPv6 client address is one client for the per-address limits
    /// (`QUOTA_IPV6_PREFIX`): a home or a phone is handed a whole /64.
    public var quotaIPv6PrefixBits = 64
    /// First reconnect delay of the in-process gateway (doubled per failure, jittered).
    public var gatewayBackoffBase: Duration = .seconds(1)
    /// How long one request may take in all; past it the client gets 503 and every wait of the
    /// request (lock, Discord, APNs, database) has already given up.
    public var requestTimeout: Duration = .seconds(20)
    /// How long a request's head and whole body may take to arrive, from its first byte; past it
    /// the connection closes (408 when nothing was answered). `requestTimeout` unless set apart.
    public var receiveTimeout: Duration?
    var arrival: RequestArrivalLimits {
        RequestArrivalLimits(timeout: receiveTimeout ?? requestTimeout, unreadBodyLimit: attachments.maxTotalBytes + UploadReader.overhead)
    }
    /// After SIGTERM, how long in-flight requests may take to finish before they are cancelled;
    /// the process is gone at most `shutdownCancelGrace` later.
    public var shutdownGrace: Duration = .seconds(10)
    /// What work under way at SIGTERM (a request, an agent's click) may take of the grace: most
    /// of it, the last second left for answers.
    var shutdownDrain: Duration { max(shutdownGrace / 2, shutdownGrace - .seconds(1)) }
    /// How long the answer to an idempotency key is kept for retries (`IDEMPOTENCY_RETENTION_HOURS`).
    public var idempotencyRetention: Duration = .seconds(48 * 3600)
    public var shutdownCancelGrace: Duration = .seconds(5)
    /// When set, every wait older than this is logged with what it waits on (a debugging switch).
    public var debugWaitThreshold: Duration?
    /// A connection that sends nothing for this long — between requests, or part-way through
    /// one (slowloris) — is closed. Requests being answered are not affected.
    public var idleTimeout: Duration = .seconds(30)

    /// Every app served: those of `apps`, or the one the single-app settings make.
    public var catalog: AppCatalog {
        if let apps, !apps.isEmpty { return AppCatalog(apps) }
        var app = AppSettings(id: .default, name: desk.teamName, appKey: appKey, guildID: guildID, forumChannelID: forumChannelID)
        app.defaultTagID = defaultTagID
        app.faqChannelID = faqChannelID
        app.identitySecret = identitySecret
        app.legacyAPIKey = legacyAPIKey
        app.supportHours = desk.hours
        app.awayMessage = desk.awayMessage
        app.apnsTopic = apns?.topic
        app.webhooks = webhookTargets
        return AppCatalog([app])
    }

    public init(
        discordToken: String, discordAPIURL: String = "https://discord.com/api/v10", guildID: String,
        forumChannelID: String, appKey: String
    ) {
        self.discordToken = discordToken
        self.discordAPIURL = discordAPIURL
        self.guildID = guildID
        self.forumChannelID = forumChannelID
        self.appKey = appKey
    }
}
