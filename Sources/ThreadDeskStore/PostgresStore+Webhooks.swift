import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    /// Webhook deliveries (schema 18).
    static let webhookSchema: [String] = [
        """
        CREATE TABLE IF NOT EXISTS webhook_deliveries (
            seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, hook TEXT NOT NULL, app TEXT NOT NULL, owner TEXT NOT NULL,
            type TEXT NOT NULL, body BYTEA NOT NULL, created_at DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt DOUBLE PRECISION NOT NULL, holder TEXT, leased_until DOUBLE PRECISION)
        """,
        "CREATE INDEX IF NOT EXISTS webhook_deliveries_queue ON webhook_deliveries (hook, owner, seq)",
        "CREATE INDEX IF NOT EXISTS webhook_deliveries_owner ON webhook_deliveries (owner)",
        """
        CREATE TABLE IF NOT EXISTS webhooks_off (
            hook TEXT PRIMARY KEY, app TEXT NOT NULL, host TEXT NOT NULL, since DOUBLE PRECISION NOT NULL)
        """,
    ]

    private static let webhookColumns = "id, hook, app, owner, type, body, created_at, attempts, next_attempt"

    /// The first delivery of each queue (one owner's deliveries to one hook).
    private static let webhookHeads = "seq IN (SELECT min(seq) FROM webhook_deliveries GROUP BY hook, owner)"

    private static func webhook(_ row: PostgresRow) throws -> WebhookDelivery? {
        let (id, hook, app, owner, type, body, created, attempts, next) = try row.decode(
            (String, String, String, String, String, ByteBuffer, Double, Int32, Double).self)
        guard let appID = AppID(app), let ownerID = UserID(storageKey: owner) else { return nil }
        return WebhookDelivery(
            id: id, hook: hook, app: appID, owner: ownerID, type: type, body: Data(buffer: body), createdAt: Date(timeIntervalSince1970: created),
            attempts: Int(attempts), nextAttempt: Date(timeIntervalSince1970: next))
    }

    /// On the connection of a user's transaction (`UserContext.webhookEvents`).
    static func enqueueWebhooks(_ deliveries: [WebhookDelivery], on connection: PostgresConnection, logger: Logger) async throws {
        for delivery in deliveries {
            try await connection.rows(
                """
                INSERT INTO webhook_deliveries (id, hook, app, owner, type, body, created_at, attempts, next_attempt)
                VALUES (\(delivery.id), \(delivery.hook), \(delivery.app.rawValue), \(delivery.owner.rawValue), \(delivery.type),
                    \(ByteBuffer(data: delivery.body)), \(delivery.createdAt.timeIntervalSince1970), \(Int32(clamping: delivery.attempts)),
                    \(delivery.nextAttempt.timeIntervalSince1970))
                ON CONFLICT (id) DO NOTHING
                """, logger: logger)
        }
    }

    public func enqueueWebhooks(_ deliveries: [WebhookDelivery]) async throws {
        guard !deliveries.isEmpty else { return }
        try await database {
            try await client.withConnection { connection in
                try await connection.rows("BEGIN", logger: logger)
                do {
                    try await Self.enqueueWebhooks(deliveries, on: connection, logger: logger)
                    try await connection.rows("COMMIT", logger: logger)
                } catch {
                    await Self.rollBack(connection, after: error, logger: logger)
                    throw error
                }
            }
        }
    }

    /// Replicas claim side by side: a head another holds the row lock of is skipped, and the lease
    /// is checked again on the row as it stands once locked.
    public func claimWebhooks(now: Date, until: Date, holder: String, limit: Int, excluding: Set<String>) async throws -> [WebhookDelivery] {
        let (moment, end) = (now.timeIntervalSince1970, until.timeIntervalSince1970)
        return try await query(
            """
            UPDATE webhook_deliveries SET holder = \(holder), leased_until = \(end)
            WHERE seq IN (
                SELECT seq FROM webhook_deliveries
                WHERE \(unescaped: Self.webhookHeads) AND next_attempt <= \(moment) AND (leased_until IS NULL OR leased_until <= \(moment))
                    AND NOT (hook = ANY(\(Array(excluding))))
                ORDER BY next_attempt, seq LIMIT \(max(0, limit)) FOR UPDATE SKIP LOCKED)
            AND (leased_until IS NULL OR leased_until <= \(moment))
            RETURNING \(unescaped: Self.webhookColumns)
            """
        ).compactMap(Self.webhook).sorted { ($0.nextAttempt, $0.createdAt) < ($1.nextAttempt, $1.createdAt) }
    }

    public func finishWebhook(_ id: String) async throws {
        try await query("DELETE FROM webhook_deliveries WHERE id = \(id)")
    }

    public func retryWebhook(_ id: String, attempts: Int, nextAttempt: Date) async throws {
        try await query(
            """
            UPDATE webhook_deliveries SET attempts = \(Int32(clamping: attempts)), next_attempt = \(nextAttempt.timeIntervalSince1970),
                holder = NULL, leased_until = NULL
            WHERE id = \(id)
            """)
    }

    public func nextWebhookDue() async throws -> Date? {
        try await query(
            "SELECT min(GREATEST(next_attempt, coalesce(leased_until, 0))) FROM webhook_deliveries WHERE \(unescaped: Self.webhookHeads)"
        ).first.flatMap { try $0.decode(Double?.self) }.map(Date.init(timeIntervalSince1970:))
    }

    public func webhookUsage() async throws -> WebhookUsage {
        guard let row = try await query("SELECT count(*), min(created_at) FROM webhook_deliveries").first else { return WebhookUsage() }
        let (count, oldest) = try row.decode((Int64, Double?).self)
        return WebhookUsage(count: Int(count), oldest: oldest.map(Date.init(timeIntervalSince1970:)))
    }

    public func releaseWebhookLeases(except holder: String) async throws {
        try await query("UPDATE webhook_deliveries SET holder = NULL, leased_until = NULL WHERE holder IS NOT NULL AND holder <> \(holder)")
    }

    public func turnWebhookOff(_ hook: WebhookOff) async throws -> Int {
        try await query(
            """
            INSERT INTO webhooks_off (hook, app, host, since) VALUES (\(hook.hook), \(hook.app.rawValue), \(hook.host), \(hook.since.timeIntervalSince1970))
            ON CONFLICT (hook) DO NOTHING
            """)
        return try await query("DELETE FROM webhook_deliveries WHERE hook = \(hook.hook) RETURNING seq").count
    }

    public func webhooksOff() async throws -> [WebhookOff] {
        try await query("SELECT hook, app, host, since FROM webhooks_off ORDER BY since, hook").compactMap { row in
            let (hook, app, host, since) = try row.decode((String, String, String, Double).self)
            return AppID(app).map { WebhookOff(hook: hook, app: $0, host: host, since: Date(timeIntervalSince1970: since)) }
        }
    }

    public func turnWebhookOn(_ hook: String) async throws {
        try await query("DELETE FROM webhooks_off WHERE hook = \(hook)")
    }

    public func pendingWebhooks(of owner: UserID?) async throws -> [WebhookDelivery] {
        if let owner {
            return try await query(
                "SELECT \(unescaped: Self.webhookColumns) FROM webhook_deliveries WHERE owner = \(owner.rawValue) ORDER BY seq"
            ).compactMap(Self.webhook)
        }
        return try await query("SELECT \(unescaped: Self.webhookColumns) FROM webhook_deliveries ORDER BY seq").compactMap(Self.webhook)
    }
}
