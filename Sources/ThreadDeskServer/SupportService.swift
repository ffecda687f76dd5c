import APNs
import Crypto
import Deadlines
import DiscordREST
import Foundation
import HTTPTypes
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// What the API does, independent of HTTP: both the `/v1` routes and the legacy routes call it.
/// Every change to one user's state runs inside `store.withUser`, so concurrent requests for the
/// same user happen one after the other and can never create two threads.
public final class SupportService: Sendable {
    let store: any UserStore
    let discord: DiscordClient<ContinuousClock>
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger
    let apns: PushSender?
    /// The debugging switch's tracker (`DEBUG_WAIT_SECONDS`), nil when off.
    let waits: WaitTracker?
    var push: PushSettings { configuration.push }
    let bot: BotIdentity
    let feed: FeedState
    /// Sends what ingestion leaves pending; nil without APNs credentials.
    let pushes: PushDispatcher?
    let ingestion: MirrorIngestion
    let sync: MirrorSync
    let reconciler: Reconciler
    /// Reconciliations asked for (gateway gaps) and run by `ReconciliationService`.
    let reconciliations = CatchUpGate()
    /// Gateway facts on their way into the mirror, per user.
    let ingestionQueue = IngestionQueue()
    /// The open event streams, and the wake-ups between replicas.
    let live: LiveHub
    let liveFeed: LiveFeed
    let typingGate: TypingGate
    /// Read receipts shown in Discord; nil when switched off.
    let receipts: ReadReceipts?
    /// Files from users, checked and read; attachments to users, streamed from Discord's CDN.
    let uploads: UploadReader
    let attachments: AttachmentProxy
    /// The limits per user, address and app.
    let quotas: Quotas
    /// The time as the service reads it (tests move it).
    let now: @Sendable () -> Date

    public init(
        store: any UserStore, discord: DiscordClient<ContinuousClock>, configuration: ServerConfiguration,
        apns: PushSender?, metrics: ServerMetrics, waits: WaitTracker? = nil, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.waits = waits
        self.now = now
        self.store = store
        self.discord = discord
        self.configuration = configuration
        self.apns = apns
        self.metrics = metrics
        self.logger = logger
        bot = BotIdentity(discord: discord)
        feed = FeedState(store: store, staleAfter: configuration.mirror.feedStaleAfter, now: now)
        pushes = apns.map { PushDispatcher(store: store, apns: $0, settings: configuration.push, metrics: metrics, logger: logger, now: now) }
        let settings = configuration.live
        live = LiveHub(
            settings: .init(
                keepAlive: settings.keepAlive, writeTimeout: settings.writeTimeout, maxDuration: settings.maxStreamDuration,
                maxStreams: settings.maxStreams,
                streamsPerUser: settings.streamsPerUser, streamsPerAddress: settings.streamsPerAddress),
            bus: store as? any LiveBus, metrics: metrics, logger: logger)
        liveFeed = LiveFeed(store: store)
        typingGate = TypingGate(interval: settings.typingInterval)
        receipts = settings.readReceiptEmoji.map {
            ReadReceipts(
                store: store, discord: discord, emoji: $0, delay: settings.readReceiptDelay, timeout: configuration.requestTimeout, logger: logger)
        }
        quotas = Quotas(
            store: store, settings: configuration.quotas,
            addresses: ClientAddressRule(
                trustedProxies: configuration.trustedProxies.compactMap(IPNetwork.init), ipv6PrefixBits: configuration.quotaIPv6PrefixBits),
            metrics: metrics)
        uploads = UploadReader(settings: configuration.attachments, metrics: metrics)
        attachments = AttachmentProxy(
            store: store, discord: discord, cdn: DiscordCDN(apiBaseURL: configuration.discordAPIURL), metrics: metrics, logger: logger)
        ingestion = MirrorIngestion(store: store, pushes: pushes, push: configuration.push, live: live, now: now)
        sync = MirrorSync(store: store, discord: discord, bot: bot, feed: feed, ingestion: ingestion, logger: logger)
        reconciler = Reconciler(
            store: store, discord: discord, feed: feed, sync: sync, configuration: configuration, metrics: metrics, logger: logger)
    }

    /// What runs beside the HTTP server for this service.
    var services: [any Service] {
        [ingestionQueue, ReconciliationService(service: self, interval: configuration.mirror.reconcileInterval), live,
         IdempotencyPruner(store: store, retention: configuration.idempotencyRetention, logger: logger, now: now)]
            + (pushes.map { [$0] } ?? []) + (receipts.map { [$0] } ?? [])
    }


    /// `withUser` with the store's latency recorded. When the body gave the user a thread and the
    /// record holding it is committed, the note that a thread may be unrecorded goes.
    func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String? = nil, work: UserWork = .waitsOnOthers, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        let start = ContinuousClock.now
        defer { metrics.storeLatency.record(start.duration(to: .now)) }
        var gotThread = false
        let result = try await store.withUser(id, idempotencyKey: idempotencyKey, work: work) { context in
            let before = context.record?.threadID
            defer { gotThread = context.record?.threadID.map { $0 != before } ?? false }
            return try await body(&context)
        }
        if gotThread {
            // Left behind, it costs one read of the active threads if this user ever needs a new one.
            do {
                try await store.setGlobalValue(Self.unrecordedThreadKey(id), to: nil)
            } catch {
                logger.warning("Could not clear the note of an unrecorded thread", metadata: ["user": "\(id.logValue)", "error": "\(error)"])
            }
        }
        return result
    }

    // MARK: Sessions

    /// Opens a session: a generated id for a new user, or the given id when it is unclaimed or
    /// proven (its current token, or the app backend's `userHash`). Every session gets a new token.
    func openSession(
        userID requested: UserID?, userHash: String?, presentedToken: String?, installation: InstallationInfo?
    ) async throws -> Session {
        let verifier = configuration.identitySecret.map(IdentityVerifier.init(secret:))
        if let requested, let verifier {
            guard let userHash, verifier.verify(userHash, for: requested) else {
                throw APIError(.forbidden, .invalidUserHash, "userHash must be the HMAC-SHA256 of userId with the app's identity secret.")
            }
        }
        let id = requested ?? UserID.generate()
        let token = UserToken.generate(for: id)
        let adoption = requested.flatMap {
            Self.adoptionNote(for: $0, verified: verifier != nil, legacyRoutes: configuration.legacyAPIKey != nil)
        }
        // Only an installation can make a session call Discord (a device note in an existing thread).
        // Tokens ended here (the oldest past the limit, a replaced claim's) end their streams too,
        // even when the rest fails: the store keeps what the body changed before it threw.
        var endedTokens = false
        defer { if endedTokens { live.tokensChanged(id) } }
        try await withUser(id, work: installation == nil || requested == nil ? .brief : .waitsOnOthers) { context in
            if context.record == nil, let adoption {
                // The reference system may have made this user's thread: the first send looks for it.
                try await store.setGlobalValue(Self.unrecordedThreadKey(id), to: adoption)
            }
            var record = context.record ?? UserRecord(id: id)
            let tokensBefore = record.liveTokenHashes
            if context.record != nil, verifier == nil {
                if let presentedToken, record.holdsToken(hash: UserToken.hash(presentedToken)) {
                    // Another session of the same client.
                } else if record.isUnusedClaim {
                    // Claimed, and nothing ever done with it (a first answer lost on the way): the
                    // new claim replaces the old, whose tokens end; there is nothing of anyone's to show.
                    record.revokeAllTokens()
                    record.pendingInstallation = nil
                } else {
                    // Used once (a conversation, a device, a request with one of its tokens), even
                    // if nothing of it is left: only its tokens, or its userHash, open it.
                    throw APIError(.conflict, .userClaimed, "This userId is in use; present one of its tokens (or its userHash) to open another session.")
                }
            }
            // Earlier tokens stay live (another device, or a renewal whose answer was lost) up to
            // `UserRecord.liveTokenLimit`; `DELETE /v1/session` ends one.
            record.addToken(hash: UserToken.hash(token))
            record.updatedAt = Date()
            context.record = record
            endedTokens = !tokensBefore.isSubset(of: record.liveTokenHashes)
            if let installation { try await applyInstallation(installation, to: &context) }
        }
        return Session(userId: id.description, token: token)
    }

    /// The note that lets the first send adopt a thread Discord has under `id`'s name, or nil when
    /// none may be adopted. Only the reference system's ids had threads ThreadDesk never recorded;
    /// there the id itself was the credential, so adopting by id alone is as strong as the legacy
    /// routes and ends with them (or needs the app backend's `userHash`).
    static func adoptionNote(for id: UserID, verified: Bool, legacyRoutes: Bool) -> String? {
        guard id.isLegacyShaped else { return nil }
        if verified { return verifiedLegacyNote }
        return legacyRoutes ? legacyNote : nil
    }

    static let legacyNote = "legacy id"
    static let verifiedLegacyNote = "legacy id, verified"
    static let attemptNotePrefix = "attempt at "

    /// The note written before an attempt to make `id`'s thread, at `date`.
    public static func attemptNote(at date: Date) -> String { attemptNotePrefix + ISO8601DateFormatter().string(from: date) }

    /// Ends the session of `token` (sign-out on one device); the user's other tokens stay live.
    func closeSession(_ record: UserRecord, token: String) async throws {
        try await withUser(record.id, work: .brief) { context in
            context.record?.removeToken(hash: UserToken.hash(token))
            context.record?.updatedAt = Date()
        }
        // Its event streams, here and on every replica, end with it.
        live.tokensChanged(record.id)
    }

    /// The whole record of the user a bearer token belongs to (one lookup for a read).
    func authenticatedUser(token: String) async throws -> UserRecord {
        guard !token.isEmpty, token.utf8.count <= 256 else { throw APIError.unauthorized }
        let hash = UserToken.hash(token)
        let found: UserRecord?
        if let user = UserToken.user(in: token) {
            found = try await store.user(user).flatMap { $0.holdsToken(hash: hash) ? $0 : nil }
        } else {
            found = try await store.user(forTokenHash: hash)
        }
        guard var record = found else { throw APIError.unauthorized }
        if !record.history.contains(.used) {
            // The first request made with one of its tokens: from now on the id is in use, and
            // no claim with the app key alone replaces it (written once per user). Under the
            // user's lock, and only while the token still holds: a claim that replaced this one
            // meanwhile (it was unused until now) wins, and this request gets nothing.
            record = try await withUser(record.id, work: .brief) { context in
                guard var current = context.record, current.holdsToken(hash: hash) else { throw APIError.unauthorized }
                current.history.insert(.used)
                context.record = current
                return current
            }
        }
        return record
    }

    // MARK: Device info and push tokens

    func updateInstallation(_ info: InstallationInfo, for id: UserID) async throws -> InstallationResult {
        try await withUser(id) { context in
            InstallationResult(changed: try await applyInstallation(info, to: &context))
        }
    }

    /// Posts the device-info note when `info` differs from what the thread last showed; before
    /// the thread exists, keeps it for the thread's creation.
    @discardableResult
    func applyInstallation(_ info: InstallationInfo, to context: inout UserContext) async throws -> Bool {
        guard var record = context.record else { return false }
        let latest = record.pendingInstallation ?? record.installation
        guard info != latest else { return false }
        if let thread = record.threadID {
            record.pendingInstallation = info
            context.record = record
            do {
                let posted = try await discord.createMessage(
                    in: thread, .init(content: info.note, nonce: Self.nonce("device", id: context.id, info.note)))
                try? await ingestOwn(posted, partOf: nil, context: context)
            } catch .api(let error) where error.threadIsGone || error.threadIsLocked {
                // The next message recreates the thread and posts the pending note there.
                return true
            } catch {
                throw APIError.from(error)
            }
            record.installation = info
        }
        record.pendingInstallation = record.threadID == nil ? info : nil
        record.updatedAt = Date()
        context.record = record
        return true
    }

    func setPushToken(_ token: String?, environment: PushEnvironment?, for id: UserID) async throws {
        try await withUser(id, work: .brief) { context in
            context.record?.pushToken = token
            context.record?.pushEnvironment = token == nil ? nil : environment
            context.record?.updatedAt = Date()
        }
    }

    /// A Discord nonce (at most 25 characters) that is the same whenever the same post is retried.
    static func nonce(_ purpose: String, id: UserID, _ parts: String...) -> String {
        let digest = SHA256.hash(data: Data(([purpose, id.rawValue] + parts).joined(separator: "\u{0}").utf8))
        return String(digest.map { String(format: "%02x", $0) }.joined().prefix(25))
    }
}

/// The APNs client and the credentials it was made from. As a service it closes the client's
/// connections when the process shuts down, after the services that push (they stop first).
public final class PushSender: Service, Sendable {
    let client: APNsClient<ContinuousClock>
    let settings: APNsSettings

    public init(settings: APNsSettings, logger: Logger) throws {
        var configuration = APNsClient<ContinuousClock>.Configuration(
            topic: settings.topic, baseURL: settings.url, additionalTrustRootPEM: settings.caCertificatePEM)
        configuration.budget = settings.budget
        self.client = try APNsClient(
            configuration: configuration, keyID: settings.keyID, teamID: settings.teamID, privateKeyPEM: settings.privateKeyPEM,
            logger: logger)
        self.settings = settings
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await client.shutdown()
    }
}
