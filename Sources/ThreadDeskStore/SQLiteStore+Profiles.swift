import Foundation
import GRDB
import ThreadDeskCore
import ThreadDeskWire

extension SQLiteStore {
    static func migrateProfiles(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v17: users' attributes and activity, article reads") { db in
            try db.execute(
                sql: """
                    CREATE TABLE user_attributes (owner TEXT PRIMARY KEY, attributes TEXT NOT NULL, updated_at DOUBLE NOT NULL);
                    CREATE TABLE user_activity (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
                        properties TEXT NOT NULL, occurred_at DOUBLE NOT NULL, UNIQUE (owner, id));
                    CREATE INDEX user_activity_newest ON user_activity (owner, occurred_at, seq);
                    CREATE TABLE article_reads (
                        owner TEXT NOT NULL, article TEXT NOT NULL, day INTEGER NOT NULL, app TEXT NOT NULL, read_at DOUBLE NOT NULL,
                        wrote INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (owner, article, day));
                    CREATE INDEX article_reads_owner ON article_reads (owner, read_at);
                    CREATE INDEX article_reads_app ON article_reads (app, read_at, article, wrote);
                    """)
        }
    }

    /// In the user's erasure (the write transaction `db` is in).
    static func eraseProfile(of owner: UserID, _ db: Database) throws {
        for table in ["user_attributes", "user_activity", "article_reads"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE owner = ?", arguments: [owner.rawValue])
        }
    }

    public func profile(of user: UserID) async throws -> UserProfile {
        try read { db in
            let attributes = try Row.fetchOne(db, sql: "SELECT attributes, updated_at FROM user_attributes WHERE owner = ?", arguments: [user.rawValue])
            let activity = try Row.fetchAll(
                db,
                sql: "SELECT id, name, properties, occurred_at FROM user_activity WHERE owner = ? ORDER BY occurred_at DESC, seq DESC LIMIT 100",
                arguments: [user.rawValue]
            ).map { row in
                ActivityRecord(id: row[0], name: row[1], properties: ProfileCoding.decode(row[2]), occurredAt: Date(timeIntervalSince1970: row[3]))
            }
            return UserProfile(
                attributes: attributes.map { ProfileCoding.decode($0[0]) } ?? [:],
                attributesUpdatedAt: attributes.map { Date(timeIntervalSince1970: $0[1]) }, activity: activity)
        }
    }

    public func setAttributes(_ attributes: [String: AttributeValue], of user: UserID, at date: Date) async throws {
        let text = try ProfileCoding.encode(attributes)
        try await write { db in
            if attributes.isEmpty {
                try db.execute(sql: "DELETE FROM user_attributes WHERE owner = ?", arguments: [user.rawValue])
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO user_attributes (owner, attributes, updated_at) VALUES (?, ?, ?)
                        ON CONFLICT (owner) DO UPDATE SET attributes = excluded.attributes, updated_at = excluded.updated_at
                        """,
                    arguments: [user.rawValue, text, date.timeIntervalSince1970])
            }
        }
    }

    public func recordActivity(_ event: ActivityRecord, of user: UserID, keep: Int) async throws -> Bool {
        let properties = try ProfileCoding.encode(event.properties)
        return try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO user_activity (owner, id, name, properties, occurred_at)
                    SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1) ON CONFLICT (owner, id) DO NOTHING
                    """,
                arguments: [user.rawValue, event.id, event.name, properties, event.occurredAt.timeIntervalSince1970])
            guard db.changesCount > 0 else { return false }
            try db.execute(
                sql: """
                    DELETE FROM user_activity WHERE owner = ?1 AND seq NOT IN (
                        SELECT seq FROM user_activity WHERE owner = ?1 ORDER BY occurred_at DESC, seq DESC LIMIT ?2)
                    """,
                arguments: [user.rawValue, max(0, keep)])
            return true
        }
    }

    public func recordArticleRead(_ article: String, by user: UserID, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO article_reads (owner, article, day, app, read_at)
                    SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1) ON CONFLICT DO NOTHING
                    """,
                arguments: [user.rawValue, article, ProfileCoding.day(date), user.app.rawValue, date.timeIntervalSince1970])
            return db.changesCount > 0
        }
    }

    public func userWroteAfterReads(_ user: UserID, at date: Date, window: TimeInterval) async throws {
        let (from, to) = ((date - window).timeIntervalSince1970, date.timeIntervalSince1970)
        try await write { db in
            try db.execute(
                sql: "UPDATE article_reads SET wrote = 1 WHERE owner = ? AND read_at >= ? AND read_at <= ? AND wrote = 0",
                arguments: [user.rawValue, from, to])
        }
    }

    public func articleReads(of user: UserID, limit: Int) async throws -> [ArticleRead] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT article, read_at, wrote FROM article_reads WHERE owner = ? ORDER BY read_at, article LIMIT ?",
                arguments: [user.rawValue, max(0, limit)]
            ).map { ArticleRead(article: $0[0], readAt: Date(timeIntervalSince1970: $0[1]), wroteAfter: ($0[2] as Int) != 0) }
        }
    }

    public func articleReadTotals(app: AppID, since: Date, limit: Int) async throws -> [ArticleReadTotal] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT article, count(*) AS reads, sum(1 - wrote) FROM article_reads WHERE app = ? AND read_at >= ?
                    GROUP BY article ORDER BY reads DESC, article LIMIT ?
                    """,
                arguments: [app.rawValue, since.timeIntervalSince1970, max(0, limit)]
            ).map { ArticleReadTotal(article: $0[0], reads: $0[1], withoutMessage: $0[2]) }
        }
    }
}
