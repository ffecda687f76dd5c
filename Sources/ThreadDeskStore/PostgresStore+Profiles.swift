import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore
import ThreadDeskWire

extension PostgresStore {
    /// Users' attributes and activity, article reads (schema 19).
    static let profileSchema: [String] = [
        "CREATE TABLE IF NOT EXISTS user_attributes (owner TEXT PRIMARY KEY, attributes TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS user_activity (
            seq BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, properties TEXT NOT NULL,
            occurred_at DOUBLE PRECISION NOT NULL, UNIQUE (owner, id))
        """,
        "CREATE INDEX IF NOT EXISTS user_activity_newest ON user_activity (owner, occurred_at, seq)",
        """
        CREATE TABLE IF NOT EXISTS article_reads (
            owner TEXT NOT NULL, article TEXT NOT NULL, day BIGINT NOT NULL, app TEXT NOT NULL, read_at DOUBLE PRECISION NOT NULL,
            wrote BOOLEAN NOT NULL DEFAULT FALSE, PRIMARY KEY (owner, article, day))
        """,
        "CREATE INDEX IF NOT EXISTS article_reads_owner ON article_reads (owner, read_at)",
        "CREATE INDEX IF NOT EXISTS article_reads_app ON article_reads (app, read_at, article, wrote)",
    ]

    /// On the connection of the user's erasure.
    static func eraseProfile(of id: UserID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.rows("DELETE FROM user_attributes WHERE owner = \(id.rawValue)", logger: logger)
        try await connection.rows("DELETE FROM user_activity WHERE owner = \(id.rawValue)", logger: logger)
        try await connection.rows("DELETE FROM article_reads WHERE owner = \(id.rawValue)", logger: logger)
    }

    public func profile(of user: UserID) async throws -> UserProfile {
        var profile = UserProfile()
        if let row = try await query("SELECT attributes, updated_at FROM user_attributes WHERE owner = \(user.rawValue)").first {
            let (text, updated) = try row.decode((String, Double).self)
            (profile.attributes, profile.attributesUpdatedAt) = (ProfileCoding.decode(text), Date(timeIntervalSince1970: updated))
        }
        profile.activity = try await query(
            "SELECT id, name, properties, occurred_at FROM user_activity WHERE owner = \(user.rawValue) ORDER BY occurred_at DESC, seq DESC LIMIT 100"
        ).map { row in
            let (id, name, properties, occurred) = try row.decode((String, String, String, Double).self)
            return ActivityRecord(id: id, name: name, properties: ProfileCoding.decode(properties), occurredAt: Date(timeIntervalSince1970: occurred))
        }
        return profile
    }

    public func setAttributes(_ attributes: [String: AttributeValue], of user: UserID, at date: Date) async throws {
        guard !attributes.isEmpty else {
            try await query("DELETE FROM user_attributes WHERE owner = \(user.rawValue)")
            return
        }
        try await query(
            """
            INSERT INTO user_attributes (owner, attributes, updated_at) VALUES (\(user.rawValue), \(try ProfileCoding.encode(attributes)),
                \(date.timeIntervalSince1970))
            ON CONFLICT (owner) DO UPDATE SET attributes = excluded.attributes, updated_at = excluded.updated_at
            """)
    }

    /// The insert and the trim in one transaction: the trim must see the new event.
    public func recordActivity(_ event: ActivityRecord, of user: UserID, keep: Int) async throws -> Bool {
        let properties = try ProfileCoding.encode(event.properties)
        return try await database {
            try await client.withConnection { connection in
                try await connection.rows("BEGIN", logger: logger)
                do {
                    let inserted = try await connection.rows(
                        """
                        INSERT INTO user_activity (owner, id, name, properties, occurred_at)
                        SELECT \(user.rawValue), \(event.id), \(event.name), \(properties), \(event.occurredAt.timeIntervalSince1970)
                        WHERE EXISTS (SELECT 1 FROM users WHERE id = \(user.rawValue))
                        ON CONFLICT (owner, id) DO NOTHING RETURNING seq
                        """, logger: logger)
                    if !inserted.isEmpty {
                        try await connection.rows(
                            """
                            DELETE FROM user_activity WHERE owner = \(user.rawValue) AND seq NOT IN (
                                SELECT seq FROM user_activity WHERE owner = \(user.rawValue) ORDER BY occurred_at DESC, seq DESC
                                LIMIT \(max(0, keep)))
                            """, logger: logger)
                    }
                    try await connection.rows("COMMIT", logger: logger)
                    return !inserted.isEmpty
                } catch {
                    await Self.rollBack(connection, after: error, logger: logger)
                    throw error
                }
            }
        }
    }

    public func recordArticleRead(_ article: String, by user: UserID, at date: Date) async throws -> Bool {
        !(try await query(
            """
            INSERT INTO article_reads (owner, article, day, app, read_at)
            SELECT \(user.rawValue), \(article), \(ProfileCoding.day(date)), \(user.app.rawValue), \(date.timeIntervalSince1970)
            WHERE EXISTS (SELECT 1 FROM users WHERE id = \(user.rawValue))
            ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty)
    }

    public func userWroteAfterReads(_ user: UserID, at date: Date, window: TimeInterval) async throws {
        try await query(
            """
            UPDATE article_reads SET wrote = TRUE
            WHERE owner = \(user.rawValue) AND read_at >= \((date - window).timeIntervalSince1970) AND read_at <= \(date.timeIntervalSince1970)
                AND NOT wrote
            """)
    }

    public func articleReads(of user: UserID, limit: Int) async throws -> [ArticleRead] {
        try await query(
            "SELECT article, read_at, wrote FROM article_reads WHERE owner = \(user.rawValue) ORDER BY read_at, article LIMIT \(max(0, limit))"
        ).map { row in
            let (article, readAt, wrote) = try row.decode((String, Double, Bool).self)
            return ArticleRead(article: article, readAt: Date(timeIntervalSince1970: readAt), wroteAfter: wrote)
        }
    }

    public func articleReadTotals(app: AppID, since: Date, limit: Int) async throws -> [ArticleReadTotal] {
        try await query(
            """
            SELECT article, count(*) AS reads, count(*) FILTER (WHERE NOT wrote) FROM article_reads
            WHERE app = \(app.rawValue) AND read_at >= \(since.timeIntervalSince1970)
            GROUP BY article ORDER BY reads DESC, article LIMIT \(max(0, limit))
            """
        ).map { row in
            let (article, reads, without) = try row.decode((String, Int64, Int64).self)
            return ArticleReadTotal(article: article, reads: Int(reads), withoutMessage: Int(without))
        }
    }
}
