import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateWebhooks(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v16: webhook deliveries") { db in
            try db.execute(
                sql: """
                    CREATE TABLE webhook_deliveries (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, hook TEXT NOT NULL, app TEXT NOT NULL,
                        owner TEXT NOT NULL, type TEXT NOT NULL, body BLOB NOT NULL, created_at DOUBLE NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0, next_attempt DOUBLE NOT NULL, holder TEXT, leased_until DOUBLE);
                    CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (hook, owner, seq);
                    CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner);
                    CREATE TABLE webhooks_off (hook TEXT PRIMARY KEY, app TEXT NOT NULL, host TEXT NOT NULL, since DOUBLE NOT NULL);
                    """)
        }
    }

    private static let webhookColumns = "id, hook, app, owner, type, body, created_at, attempts, next_attempt"

    /// The first delivery of each queue (one owner's deliveries to one hook).
    private static let webhookHeads = "seq IN (SELECT min(seq) FROM webhook_deliveries GROUP BY hook, owner)"

    private static func webhook(_ row: Row) -> WebhookDelivery? {
        guard let app = AppID(row[2] as String), let owner = UserID(storageKey: row[3] as String) else { return nil }
        return WebhookDelivery(
            id: row[0], hook: row[1], app: app, owner: owner, type: row[4], body: row[5], createdAt: Date(timeIntervalSince1970: row[6]),
            attempts: row[7], nextAttempt: Date(timeIntervalSince1970: row[8]))
    }

    /// Within the write transaction `db` is in (a user's, `UserContext.webhookEvents`). A delivery
    /// kept already (a commit retried) is kept once.
    static func enqueueWebhooks(_ deliveries: [WebhookDelivery], _ db: Database) throws {
        for delivery in deliveries {
            try db.execute(
                sql: """
                    INSERT INTO webhook_deliveries (id, hook, app, owner, type, body, created_at, attempts, next_attempt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
                    """,
                arguments: [
                    delivery.id, delivery.hook, delivery.app.rawValue, delivery.owner.rawValue, delivery.type, delivery.body,
                    delivery.createdAt.timeIntervalSince1970, delivery.attempts, delivery.nextAttempt.timeIntervalSince1970,
                ])
        }
    }

    public func enqueueWebhooks(_ deliveries: [WebhookDelivery]) async throws {
        guard !deliveries.isEmpty else { return }
        try await write { db in try Self.enqueueWebhooks(deliveries, db) }
    }

    public func claimWebhooks(now: Date, until: Date, holder: String, limit: Int, excluding: Set<String>) async throws -> [WebhookDelivery] {
        let (moment, end) = (now.timeIntervalSince1970, until.timeIntervalSince1970)
        let excluded = Array(excluding)
        let marks = excluded.isEmpty ? "" : "AND hook NOT IN (" + Array(repeating: "?", count: excluded.count).joined(separator: ",") + ")"
        return try await write { db in
            var values: [(any DatabaseValueConvertible)?] = [moment, moment]
            values += excluded.map { $0 as (any DatabaseValueConvertible)? }
            values.append(max(0, limit))
            let due = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.webhookColumns) FROM webhook_deliveries
                    WHERE \(Self.webhookHeads) AND next_attempt <= ? AND (leased_until IS NULL OR leased_until <= ?) \(marks)
                    ORDER BY next_attempt, seq LIMIT ?
                    """,
                arguments: StatementArguments(values)
            ).compactMap(Self.webhook)
            for delivery in due {
                try db.execute(sql: "UPDATE webhook_deliveries SET holder = ?, leased_until = ? WHERE id = ?", arguments: [holder, end, delivery.id])
            }
            return due
        }
    }

    public func finishWebhook(_ id: String) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM webhook_deliveries WHERE id = ?", arguments: [id]) }
    }

    public func retryWebhook(_ id: String, attempts: Int, nextAttempt: Date) async throws {
        let next = nextAttempt.timeIntervalSince1970
        try await write { db in
            try db.execute(
                sql: "UPDATE webhook_deliveries SET attempts = ?, next_attempt = ?, holder = NULL, leased_until = NULL WHERE id = ?",
                arguments: [attempts, next, id])
        }
    }

    public func nextWebhookDue() async throws -> Date? {
        try read { db in
            try Double.fetchOne(
                db, sql: "SELECT min(max(next_attempt, coalesce(leased_until, 0))) FROM webhook_deliveries WHERE \(Self.webhookHeads)")
        }.map(Date.init(timeIntervalSince1970:))
    }

    public func webhookUsage() async throws -> WebhookUsage {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT count(*), min(created_at) FROM webhook_deliveries")
            return WebhookUsage(count: row?[0] ?? 0, oldest: (row?[1] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }

    public func releaseWebhookLeases(except holder: String) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE webhook_deliveries SET holder = NULL, leased_until = NULL WHERE holder IS NOT NULL AND holder <> ?", arguments: [holder])
        }
    }

    public func turnWebhookOff(_ hook: WebhookOff) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO webhooks_off (hook, app, host, since) VALUES (?, ?, ?, ?) ON CONFLICT (hook) DO NOTHING",
                arguments: [hook.hook, hook.app.rawValue, hook.host, hook.since.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM webhook_deliveries WHERE hook = ?", arguments: [hook.hook])
            return db.changesCount
        }
    }

    public func webhooksOff() async throws -> [WebhookOff] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT hook, app, host, since FROM webhooks_off ORDER BY since, hook").compactMap { row in
                AppID(row[1] as String).map { WebhookOff(hook: row[0], app: $0, host: row[2], since: Date(timeIntervalSince1970: row[3])) }
            }
        }
    }

    public func turnWebhookOn(_ hook: String) async throws {
        try await write { db in try db.execute(sql: "DELETE FROM webhooks_off WHERE hook = ?", arguments: [hook]) }
    }

    public func pendingWebhooks(of owner: UserID?) async throws -> [WebhookDelivery] {
        try read { db in
            if let owner {
                return try Row.fetchAll(
                    db, sql: "SELECT \(Self.webhookColumns) FROM webhook_deliveries WHERE owner = ? ORDER BY seq", arguments: [owner.rawValue]
                ).compactMap(Self.webhook)
            }
            return try Row.fetchAll(db, sql: "SELECT \(Self.webhookColumns) FROM webhook_deliveries ORDER BY seq").compactMap(Self.webhook)
        }
    }
}

extension SQLiteStore {
    /// The webhooks turned off, read from the file at `path` without opening the store (`threaddesk
    /// doctor`); nil before the deliveries' migration.
    public static func webhooksOff(path: String) throws -> [WebhookOff]? {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            guard try db.tableExists("webhooks_off") else { return nil }
            return try Row.fetchAll(db, sql: "SELECT hook, app, host, since FROM webhooks_off ORDER BY since, hook").compactMap { row in
                AppID(row[1] as String).map { WebhookOff(hook: row[0], app: $0, host: row[2], since: Date(timeIntervalSince1970: row[3])) }
            }
        }
    }
}
