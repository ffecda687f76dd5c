import Deadlines
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import ServiceLifecycle
import Synchronization
import ThreadDeskCore

/// The store for several replicas: one PostgreSQL database is the truth. `withUser` holds a
/// transaction with `pg_advisory_xact_lock` on the user's key for the whole read-modify-write,
/// Discord calls included, so serialization holds across processes; the in-process FIFO lock in
/// front keeps one replica from queueing its own requests on the database.
///
/// Two connection pools of `poolSize` each: `client` for reads and short writes, `holdingClient`
/// for work that keeps its connection while it waits on something else (a user's transaction
/// across Discord calls, an exclusive job). With one pool, 20 sends waiting on a slow Discord held
/// every connection, and every other user's poll got 503 after the lease timeout.
public final class PostgresStore: UserStore, Service {
    let client: PostgresClient
    let holdingClient: PostgresClient
    /// Admission to `holdingClient`, one key, `poolSize` holders.
    private let holders = KeyedFIFOLock<Int>(defaultTimeout: PostgresStore.leaseTimeout, holders: PostgresStore.poolSize)
    /// Connections in each pool: a replica opens up to twice this many.
    public static let poolSize = 20
    let lock: KeyedFIFOLock<UserID>
    let logger: Logger
    /// The NOTIFY channel of this deployment's live events (one per schema, so deployments that
    /// share a database stay apart).
    let liveChannel: String
    /// The NOTIFY channel of the words of change that keep each replica's memory true (`ReplicaCache`).
    let changeChannel: String
    /// This process's name among the replicas, in its pings.
    let replica = UUID().uuidString
    let replicaCache: ReplicaCache
    private let takes = Atomic<Int>(0)
    let clientHealth = PoolHealth()
    let holdingHealth = PoolHealth()

    /// - Parameter url: `postgres://user:password@host:port/database`; `search_path` may be given
    ///   as a query parameter (tests use one schema each).
    /// - Parameter cacheClock: the clock the replica's memory ages on (tests move their own).
    /// - Parameter lockWait: how long a request waits for a user's lock at most (this process's
    ///   queue and PostgreSQL's advisory lock together).
    public init(
        url: String, logger: Logger = Logger(label: "threaddesk.store"),
        cacheClock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        lockWait: Duration = UserLockWait.standard
    ) throws {
        lock = UserLockWait.lock(wait: lockWait)
        replicaCache = ReplicaCache(now: cacheClock)
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host
        else {
            throw StoreError.invalidURL
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres", password: components.password,
            database: components.path.isEmpty ? nil : String(components.path.dropFirst()), tls: .disable)
        configuration.options.maximumConnections = Self.poolSize
        var parameters: [(String, String)] = [("statement_timeout", "30000"), ("idle_in_transaction_session_timeout", "60000")]
        let schema = components.queryItems?.first(where: { $0.name == "search_path" })?.value
        if let schema { parameters.append(("search_path", schema)) }
        let suffix = schema.map { "_" + String($0.lowercased().filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }.prefix(40)) } ?? ""
        liveChannel = "threaddesk_live" + suffix
        changeChannel = "threaddesk_changes" + suffix
        configuration.options.additionalStartupParameters = parameters
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.holdingClient = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    public enum StoreError: Error, CustomStringConvertible {
        case invalidURL
        case invalidRow(String)

        public var description: String {
            switch self {
            case .invalidURL: "STORE_URL must look like postgres://user:password@host:5432/database"
            case .invalidRow(let problem): "unreadable row: \(problem)"
            }
        }
    }

    /// Runs a migrated store for the duration of `body` (tests and tools; servers run it as a `Service`).
    public static func withRunning<T: Sendable>(
        url: String, logger: Logger = Logger(label: "threaddesk.store"), lockWait: Duration = UserLockWait.standard,
        _ body: (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = try PostgresStore(url: url, logger: logger, lockWait: lockWait)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.client.run() }
            group.addTask { await store.holdingClient.run() }
            group.addTask { await store.listenForChanges() }
            group.addTask { await store.sendPings() }
            defer { group.cancelAll() }
            try await store.migrate()
            return try await body(store)
        }
    }

    /// Runs the connection pool until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.client.run() }
                group.addTask { await self.holdingClient.run() }
                group.addTask { await self.listenForChanges() }
                group.addTask { await self.sendPings() }
            }
        }
    }

    /// Creates the tables when missing. Safe when several replicas start at once: they take turns
    /// under an advisory lock. With the database away it fails after the lease timeout.
    public func migrate() async throws {
        try await database { try await migrateOnce() }
    }

    private func migrateOnce() async throws {
        try await client.withConnection { connection in
            // One lock per schema: deployments (and tests) that share a database but not a schema
            // never wait on each other's migration.
            try await connection.rows("SELECT pg_advisory_lock(\(unescaped: Self.migrationLock))", logger: logger)
            do {
                // A database a newer ThreadDesk migrated is left as it is: this version would not
                // keep what the newer one wrote, or could break it.
                try await connection.rows("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", logger: logger)
                let found = try await connection.rows("SELECT max(version) FROM schema_version", logger: logger)
                    .first.flatMap { try $0.decode(Int?.self) }
                if let found, found > Self.schemaVersion { throw SchemaTooNew(found: found, known: Self.schemaVersion) }
                for statement in Self.schema { try await connection.rows(PostgresQuery(unsafeSQL: statement), logger: logger) }
                if found != Self.schemaVersion {
                    try await connection.rows("DELETE FROM schema_version", logger: logger)
                    try await connection.rows("INSERT INTO schema_version (version) VALUES (\(Self.schemaVersion))", logger: logger)
                }
                try await connection.rows("SELECT pg_advisory_unlock(\(unescaped: Self.migrationLock))", logger: logger)
            } catch {
                if Self.connectionSurvives(error, connection) {
                    _ = try? await connection.rows(
                        "SELECT pg_advisory_unlock(\(unescaped: Self.migrationLock))", logger: logger, deadline: .seconds(5))
                }
                throw error
            }
        }
    }

    /// The schema this version writes (raise it with every change to `schema`). A database at a
    /// higher one was migrated by a newer ThreadDesk.
    public static let schemaVersion = 19

    /// The database was migrated by a newer version of ThreadDesk.
    public struct SchemaTooNew: Error, CustomStringConvertible {
        public let found: Int
        public let known: Int

        public var description: String {
            "the database's schema is version \(found), newer than this ThreadDesk's \(known); run that version, or restore a backup"
        }
    }

    /// The migration's advisory lock key: the schema's own.
    static let migrationLock = "hashtextextended('threaddesk migration ' || current_schema(), 0)"

    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS users (
            id TEXT PRIMARY KEY, token_hash TEXT UNIQUE, thread_id TEXT, push_token TEXT, push_environment TEXT,
            installation TEXT, pending_installation TEXT, pending_post TEXT, last_notified_message_id TEXT,
            last_read_message_id TEXT, recent_notified_ids TEXT, unread_count INTEGER NOT NULL DEFAULT 0,
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS users_thread_id ON users (thread_id)",
        """
        CREATE TABLE IF NOT EXISTS idempotency (
            user_id TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, body BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (user_id, key))
        """,
        "CREATE INDEX IF NOT EXISTS idempotency_created_at ON idempotency (created_at)",
        "CREATE TABLE IF NOT EXISTS global_values (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS quota_buckets (key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, updated_at TIMESTAMPTZ NOT NULL)",
        "CREATE INDEX IF NOT EXISTS quota_buckets_updated_at ON quota_buckets (updated_at)",
    ] + mirrorSchema + [
        "ALTER TABLE users ADD COLUMN IF NOT EXISTS earlier_token_hashes TEXT",
        // The backfill runs once: in the transaction that adds the column.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                           WHERE table_schema = current_schema() AND table_name = 'users' AND column_name = 'history') THEN
                ALTER TABLE users ADD COLUMN history INTEGER NOT NULL DEFAULT 0;
                \(UserHistory.backfill);
            END IF;
        END $$
        """,
    ] + attestationSchema + [
        // Tokens issued before have no note: each counts from its first use after.
        "ALTER TABLE users ADD COLUMN IF NOT EXISTS token_used_at TEXT",
    ] + outboxSchema + [
        // Messages delivered from the outbox (schema 12): their state, and Discord's ids of them.
        "ALTER TABLE mirror_messages ADD COLUMN IF NOT EXISTS delivery TEXT NOT NULL DEFAULT 'sent'",
        "ALTER TABLE mirror_messages ADD COLUMN IF NOT EXISTS delivery_error TEXT",
        "CREATE TABLE IF NOT EXISTS mirror_aliases (discord_id BIGINT PRIMARY KEY, message_id BIGINT NOT NULL, owner TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS mirror_aliases_message ON mirror_aliases (message_id)",
        "CREATE INDEX IF NOT EXISTS mirror_aliases_owner ON mirror_aliases (owner)",
        "ALTER TABLE users ADD COLUMN IF NOT EXISTS pending_thread TEXT",
        "ALTER TABLE outbox_items ADD COLUMN IF NOT EXISTS may_start_thread BOOLEAN NOT NULL DEFAULT TRUE",
        // Turns on Discord's buckets the replicas share, in Discord's windows (schema 13).
        """
        CREATE TABLE IF NOT EXISTS turn_windows (
            key TEXT PRIMARY KEY, opened_at TIMESTAMPTZ NOT NULL, used INTEGER NOT NULL, known_seconds DOUBLE PRECISION NOT NULL)
        """,
        // The trace of an accepted message, continued by its delivery (schema 14).
        "ALTER TABLE outbox_items ADD COLUMN IF NOT EXISTS trace_parent TEXT",
    ] + assistSchema + crashSchema + conversationSchema + webhookSchema + profileSchema

    /// Database failures, as opposed to the caller's own errors, become `StoreUnavailableError`.
    /// While the pool answers, the operation leases at once; after a failure that looks like the
    /// database going away, a lease probe comes first (see `PoolHealth`), until one succeeds.
    func database<T>(pool: PostgresClient? = nil, _ operation: () async throws -> T) async throws -> T {
        let pool = pool ?? client
        let health = pool === holdingClient ? holdingHealth : clientHealth
        if !health.isAnswering {
            try await ensureConnectionAvailable(in: pool)
            health.answered()
        }
        do {
            return try await operation()
        } catch let error as PSQLError {
            if !(error.code == .server && error.serverInfo?[.severity] == "ERROR") { health.failed() }
            throw StoreUnavailableError(error)
        } catch let error as StoreUnavailableError {
            health.failed()
            throw error
        }
    }

    /// Ends a transaction that failed with `error`. Only a database failure gets here (the body's
    /// own errors travel in its result). When the connection is gone, or going (FATAL, PANIC, a
    /// closed socket), nothing is sent: the server has rolled back already, and postgres-nio 1.33
    /// never answers a query sent on a connection that is going away, so a ROLLBACK there would
    /// hold the request forever (found by the PostgreSQL restart test). Otherwise ROLLBACK, within
    /// a deadline all the same.
    static func rollBack(_ connection: PostgresConnection, after error: any Error, logger: Logger) async {
        guard connectionSurvives(error, connection) else { return }
        do {
            try await connection.rows("ROLLBACK", logger: logger, deadline: .seconds(5))
        } catch {
            logger.warning("ROLLBACK failed; the connection is left to the pool to discard", metadata: ["error": "\(error)"])
        }
    }

    /// Whether the connection can still take a query after `error`: a plain SQL error (severity
    /// ERROR) on an open connection, or a failure of our own between queries.
    static func connectionSurvives(_ error: any Error, _ connection: PostgresConnection) -> Bool {
        if connection.isClosed { return false }
        guard let error = error as? PSQLError else { return true }
        return error.code == .server && error.serverInfo?[.severity] == "ERROR"
    }

    /// How long a request waits for the pool to hand out a connection before it is told the store
    /// is unavailable (503, retry), instead of waiting as long as the database is away.
    static let leaseTimeout: Duration = .seconds(5)

    struct LeaseTimeout: Error, CustomStringConvertible {
        var description: String { "no database connection within \(PostgresStore.leaseTimeout)" }
    }

    /// Leases and returns a connection within `leaseTimeout`, or throws. Waiting for a lease is
    /// cancellable, waiting inside a transaction is not, so this probe is what a deadline can
    /// bound; the operation that follows finds the connection idle in the pool. It runs only while
    /// the pool is not known to answer: two tasks and a timer per operation are what made every
    /// PostgreSQL read slow.
    private func ensureConnectionAvailable(in client: PostgresClient) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await client.withConnection { _ in }
                return true
            }
            group.addTask {
                try await cancellableSleep(for: Self.leaseTimeout)
                return false
            }
            let leased: Bool
            do {
                leased = try await group.next() ?? false
            } catch let error as PSQLError {
                throw StoreUnavailableError(error)
            }
            group.cancelAll()
            if !leased {
                logger.warning("No database connection within the lease timeout", metadata: ["timeout": "\(Self.leaseTimeout)"])
                throw StoreUnavailableError(LeaseTimeout())
            }
        }
    }

    public func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String?, work: UserWork, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        try await inUserTransaction(id, work: work) { connection -> Result<T, any Error> in
            // The body's own error travels in the result: the transaction commits what it did.
            do {
                return .success(
                    try await UserTransaction.run(
                        id, idempotencyKey: idempotencyKey,
                        read: { try await Self.read(id, idempotencyKey: idempotencyKey, on: connection, logger: logger) },
                        save: { changed, kept, accepted in
                            try await Self.save(changed, kept, for: id, on: connection, logger: logger, changes: changeChannel)
                            try await Self.enqueue(accepted.items, on: connection, logger: logger)
                            try await Self.enqueueWebhooks(accepted.webhooks, on: connection, logger: logger)
                            if !accepted.mirrored.isEmpty {
                                try await connection.rows(
                                    try Self.mirrorSave(accepted.mirrored, changes: changeChannel), logger: logger)
                            }
                        },
                        body: { context in
                            do {
                                return try await body(&context)
                            } catch {
                                throw BodyFailure(error: error)
                            }
                        }))
            } catch let failure as BodyFailure {
                return .failure(failure.error)
            }
        }.get()
    }

    /// Runs `body` in one transaction that holds the user's advisory lock (and this process's
    /// lock of the user in front of it), and commits what it did; any error rolls it back.
    /// - Parameters:
    ///   - id: The user whose lock the transaction holds.
    ///   - work: Whether the connection is held across waits on others (the holding pool).
    ///   - body: The reads and writes, on the transaction's connection.
    /// - Throws: `DeadlineExceeded` when the lock does not come within the request's time,
    ///   `StoreUnavailableError` for a database failure, and whatever `body` throws.
    func inUserTransaction<T>(_ id: UserID, work: UserWork, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await lock.withLock(id) {
            try await withConnection(for: work) { connection in
                try await connection.rows("BEGIN", logger: logger)
                do {
                    // Another replica's holder must not keep this request waiting past its deadline.
                    let wait = Int(Deadline.capping(lock.defaultTimeout) / .milliseconds(1))
                    try await connection.rows("SELECT set_config('lock_timeout', \("\(max(1, wait))ms"), true)", logger: logger)
                    try await connection.rows("SELECT pg_advisory_xact_lock(hashtextextended(\(id.rawValue), 0))", logger: logger)
                    let result = try await body(connection)
                    try await connection.rows("COMMIT", logger: logger)
                    return result
                } catch {
                    await Self.rollBack(connection, after: error, logger: logger)
                    throw error
                }
            }
        }
    }

    /// The body's error, told apart from the database's: the first commits, the second rolls back.
    private struct BodyFailure: Error {
        let error: any Error
    }

    private static func read(_ id: UserID, idempotencyKey: String?, on connection: PostgresConnection, logger: Logger) async throws
        -> (record: UserRecord?, kept: IdempotentResult?)
    {
        let record = try await fetchUser(id, on: connection, logger: logger)
        guard let idempotencyKey else { return (record, nil) }
        let rows = try await connection.rows(
            "SELECT fingerprint, body FROM idempotency WHERE user_id = \(id.rawValue) AND key = \(idempotencyKey)", logger: logger)
        var kept: IdempotentResult?
        for row in rows {
            let (fingerprint, body) = try row.decode((String, ByteBuffer).self)
            kept = IdempotentResult(stored: Data(buffer: body), fingerprint: fingerprint)
        }
        return (record, kept)
    }

    private static func save(
        _ changed: UserRecord?, _ result: (key: String, result: IdempotentResult)?, for id: UserID, on connection: PostgresConnection,
        logger: Logger, changes: String
    ) async throws {
        if let changed { try await saveUser(changed, on: connection, logger: logger, changes: changes) }
        if let (key, result) = result {
            try await connection.rows(
                """
                INSERT INTO idempotency (user_id, key, fingerprint, status, body, created_at)
                VALUES (\(id.rawValue), \(key), \(result.fingerprint), \(IdempotentResult.storedStatus), \(ByteBuffer(data: result.encoded)), now())
                ON CONFLICT (user_id, key) DO NOTHING
                """, logger: logger)
        }
    }

    /// Runs `operation` on a connection of the pool that suits `work`. The holding pool's
    /// connections are handed out in arrival order, and a request that finds them all held gives
    /// up after `leaseTimeout` (503, retry): postgres-nio's own wait for a lease has no deadline.
    func withConnection<T>(for work: UserWork, _ operation: (PostgresConnection) async throws -> T) async throws -> T {
        if work == .brief {
            return try await database { try await client.withConnection(operation) }
        }
        var leased = false
        do {
            return try await holders.withLock(0) {
                leased = true
                return try await database(pool: holdingClient) { try await holdingClient.withConnection(operation) }
            }
        } catch let error as DeadlineExceeded where !leased {
            logger.warning("Every holding connection is in use", metadata: ["pool": "\(Self.poolSize)", "waited": "\(error.after)"])
            throw StoreUnavailableError(LeaseTimeout())
        }
    }

    public func user(_ id: UserID) async throws -> UserRecord? {
        try await remembered({ $0.user(id) }, keep: { $0.keep($1, for: id, since: $2) }) {
            try await database { try await client.withConnection { try await Self.fetchUser(id, on: $0, logger: logger) } }
        }
    }

    public func user(forTokenHash hash: String) async throws -> UserRecord? {
        try await database {
            try await client.withConnection { connection in
                let rows = try await connection.rows(
                    "SELECT \(unescaped: Self.columns) FROM users WHERE token_hash = \(hash)", logger: logger)
                return try rows.first.map(Self.user)
            }
        }
    }

    public func userID(forThread threadID: String) async throws -> UserID? {
        try await singleID("SELECT id FROM users WHERE thread_id = \(threadID) LIMIT 1")
    }

    private func singleID(_ query: PostgresQuery) async throws -> UserID? {
        try await database {
            let rows = try await client.withConnection { try await $0.rows(query, logger: logger) }
            return try rows.first.map { UserID(storageKey: try $0.decode(String.self)) } ?? nil
        }
    }

    public func globalValue(_ key: String) async throws -> String? {
        try await database {
            let rows = try await client.withConnection {
                try await $0.rows("SELECT value FROM global_values WHERE key = \(key)", logger: logger)
            }
            return try rows.first?.decode(String.self)
        }
    }

    public func pruneResults(before date: Date) async throws -> Int {
        try await database {
            let rows = try await client.withConnection { connection in
                try await connection.rows(
                    "WITH gone AS (DELETE FROM idempotency WHERE created_at < \(date) RETURNING 1) SELECT count(*) FROM gone", logger: logger)
            }
            return try rows.first?.decode(Int.self) ?? 0
        }
    }

    public func setGlobalValue(_ key: String, to value: String?) async throws {
        try await database { try await writeGlobalValue(key, value) }
    }

    private func writeGlobalValue(_ key: String, _ value: String?) async throws {
        let query: PostgresQuery = if let value {
            "INSERT INTO global_values (key, value) VALUES (\(key), \(value)) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        } else {
            "DELETE FROM global_values WHERE key = \(key)"
        }
        _ = try await client.withConnection { try await $0.rows(query, logger: logger) }
    }

    /// The bucket's row is made first if missing (full), then locked while it is refilled and
    /// taken from, so every replica sees one bucket, even at its first use.
    public func takeToken(_ key: String, limit: QuotaLimit, cost: Double) async throws -> Duration? {
        guard limit.count > 0 else { return nil }
        let capacity = Double(limit.count)
        let cost = min(max(cost, 0), capacity)
        let rate = limit.rate
        let available = try await database {
            let rows = try await client.withConnection { connection in
                try await connection.rows(
                    "INSERT INTO quota_buckets (key, tokens, updated_at) VALUES (\(key), \(capacity), clock_timestamp()) ON CONFLICT (key) DO NOTHING",
                    logger: logger)
                return try await connection.rows(
                    """
                    WITH previous AS (SELECT tokens, updated_at FROM quota_buckets WHERE key = \(key) FOR UPDATE),
                    available AS (
                        SELECT LEAST(\(capacity), COALESCE(
                            (SELECT tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - updated_at)) * \(rate) FROM previous),
                            \(capacity))) AS tokens),
                    taken AS (
                        INSERT INTO quota_buckets (key, tokens, updated_at)
                        SELECT \(key), CASE WHEN tokens >= \(cost) THEN tokens - \(cost) ELSE tokens END, clock_timestamp() FROM available
                        ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at)
                    SELECT tokens FROM available
                    """, logger: logger)
            }
            return try rows.first?.decode(Double.self) ?? capacity
        }
        if takes.add(1, ordering: .relaxed).newValue % 1000 == 0 { await pruneQuotas() }
        guard available < cost else { return nil }
        return .milliseconds(Int64(((cost - available) / rate * 1000).rounded(.up)))
    }

    public func returnToken(_ key: String, limit: QuotaLimit, cost: Double) async throws {
        guard limit.count > 0 else { return }
        let capacity = Double(limit.count)
        let cost = min(max(cost, 0), capacity)
        try await database {
            _ = try await client.withConnection { connection in
                try await connection.rows(
                    "UPDATE quota_buckets SET tokens = LEAST(\(capacity), tokens + \(cost)) WHERE key = \(key)", logger: logger)
            }
        }
    }

    /// A window's row (`turn_windows`): the turns given in it, when it opened by the database's
    /// clock (which every replica shares), and the longest window any replica knew. The row is
    /// made first if missing (a window long closed), then locked while the turn is decided, in one
    /// statement, as `TurnWindow.decide` decides.
    public func takeWindowTurn(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration? {
        let (windowSeconds, latenessSeconds) = (window / .seconds(1), lateness / .seconds(1))
        let limit = max(1, limit)
        let wait = try await database {
            let rows = try await client.withConnection { connection in
                try await connection.rows(
                    """
                    INSERT INTO turn_windows (key, opened_at, used, known_seconds)
                    VALUES (\(key), clock_timestamp() - make_interval(secs => \(windowSeconds + latenessSeconds + 1)), 0, \(windowSeconds))
                    ON CONFLICT (key) DO NOTHING
                    """, logger: logger)
                return try await connection.rows(
                    """
                    WITH previous AS (
                        SELECT used, opened_at, GREATEST(known_seconds, \(windowSeconds)) AS known,
                            GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - opened_at)::DOUBLE PRECISION) AS age
                        FROM turn_windows WHERE key = \(key) FOR UPDATE),
                    decided AS (
                        SELECT known,
                            CASE WHEN age >= known + \(latenessSeconds) THEN 1
                                 WHEN age < known - \(latenessSeconds) AND used < \(limit) THEN used + 1
                                 ELSE used END AS used,
                            CASE WHEN age >= known + \(latenessSeconds) THEN clock_timestamp() ELSE opened_at END AS opened_at,
                            CASE WHEN age >= known + \(latenessSeconds) THEN 0::DOUBLE PRECISION
                                 WHEN age < known - \(latenessSeconds) AND used < \(limit) THEN 0::DOUBLE PRECISION
                                 ELSE known + \(latenessSeconds) - age END AS wait
                        FROM previous),
                    saved AS (
                        UPDATE turn_windows SET used = decided.used, opened_at = decided.opened_at, known_seconds = decided.known
                        FROM decided WHERE turn_windows.key = \(key))
                    SELECT wait FROM decided
                    """, logger: logger)
            }
            // No row (pruned between the two statements): no turn yet; the caller asks again.
            return try rows.first?.decode(Double.self) ?? 0.05
        }
        if takes.add(1, ordering: .relaxed).newValue % 1000 == 0 { await pruneQuotas() }
        guard wait > 0 else { return nil }
        return .milliseconds(Int64((wait * 1000).rounded(.up)))
    }

    /// Buckets untouched for a day are full again: the same as none.
    private func pruneQuotas() async {
        do {
            _ = try await database {
                try await client.withConnection {
                    try await $0.rows("DELETE FROM quota_buckets WHERE updated_at < now() - interval '1 day'", logger: logger)
                    try await $0.rows("DELETE FROM turn_windows WHERE opened_at < now() - interval '1 day'", logger: logger)
                }
            }
        } catch {
            logger.notice("Could not prune quota buckets", metadata: ["error": "\(error)"])
        }
    }

    public var bus: (any LiveBus)? { self }
    public var lifetime: (any Service)? { self }

    public func checkReachable() async throws {
        _ = try await database { try await client.withConnection { try await $0.rows("SELECT 1", logger: logger) } }
    }

    private static let columns = UserColumns.names

    static func fetchUser(_ id: UserID, on connection: PostgresConnection, logger: Logger) async throws -> UserRecord? {
        let rows = try await connection.rows("SELECT \(unescaped: columns) FROM users WHERE id = \(id.rawValue)", logger: logger)
        return try rows.first.map(user)
    }

    /// A row selected with `columns`.
    static func user(_ row: PostgresRow) throws -> UserRecord {
        let cells = try row.decode(
            (String, String?, String?, String?, String?, String?, String?, String?, String?, String?, String?, Int, Date, Date, String?, String?, Int,
             String?, String?).self)
        return try UserColumns(
            id: cells.0, token_hash: cells.1, thread_id: cells.2, push_token: cells.3, push_environment: cells.4, installation: cells.5,
            pending_installation: cells.6, pending_post: cells.7, last_notified_message_id: cells.8, last_read_message_id: cells.9,
            recent_notified_ids: cells.10, unread_count: cells.11, created_at: cells.12, updated_at: cells.13, live_state: cells.14,
            earlier_token_hashes: cells.15, history: cells.16, token_used_at: cells.17, pending_thread: cells.18
        ).record
    }

    /// Saves `record` and tells every replica on the channel `changes`, in one statement.
    static func saveUser(_ record: UserRecord, on connection: PostgresConnection, logger: Logger, changes: String) async throws {
        let row = UserColumns(record)
        let word = Change.payload([.user(record.id)])
        try await connection.rows(
            """
            WITH saved AS (INSERT INTO users (\(unescaped: columns))
            VALUES (\(row.id), \(row.token_hash), \(row.thread_id), \(row.push_token), \(row.push_environment),
                    \(row.installation), \(row.pending_installation), \(row.pending_post),
                    \(row.last_notified_message_id), \(row.last_read_message_id), \(row.recent_notified_ids),
                    \(row.unread_count), \(row.created_at), \(row.updated_at), \(row.live_state), \(row.earlier_token_hashes), \(row.history),
                    \(row.token_used_at), \(row.pending_thread))
            ON CONFLICT (id) DO UPDATE SET
                token_hash = excluded.token_hash, thread_id = excluded.thread_id, push_token = excluded.push_token,
                push_environment = excluded.push_environment, installation = excluded.installation,
                pending_installation = excluded.pending_installation, pending_post = excluded.pending_post,
                last_notified_message_id = excluded.last_notified_message_id, last_read_message_id = excluded.last_read_message_id,
                recent_notified_ids = excluded.recent_notified_ids, unread_count = excluded.unread_count, updated_at = excluded.updated_at,
                live_state = excluded.live_state, earlier_token_hashes = excluded.earlier_token_hashes,
                history = users.history | excluded.history, token_used_at = excluded.token_used_at,
                pending_thread = excluded.pending_thread)
            SELECT pg_notify(\(changes), \(word))
            """, logger: logger)
    }
}
