import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateConversations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v15: conversations, their waits, closes and ratings") { db in
            try db.execute(
                sql: """
                    CREATE TABLE conversations (
                        id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, app TEXT NOT NULL, thread_id INTEGER,
                        opened_at DOUBLE NOT NULL, first_response_at DOUBLE, response_seconds DOUBLE, last_user_at DOUBLE, last_support_at DOUBLE,
                        waiting_since DOUBLE, reminded_at DOUBLE, reminders INTEGER NOT NULL DEFAULT 0, close_due_at DOUBLE,
                        closed_at DOUBLE, closed_by TEXT, rating_requested_at DOUBLE, rating INTEGER, rating_comment TEXT, rated_at DOUBLE);
                    CREATE UNIQUE INDEX conversations_open ON conversations (owner) WHERE closed_at IS NULL;
                    CREATE INDEX conversations_owner ON conversations (owner, id);
                    -- Covering the numbers' reads: a year of an app's conversations is read from the index alone.
                    CREATE INDEX conversations_opened ON conversations (app, opened_at, first_response_at, response_seconds, reminders);
                    CREATE INDEX conversations_closed ON conversations (app, closed_at, opened_at) WHERE closed_at IS NOT NULL;
                    CREATE INDEX conversations_rated ON conversations (app, rated_at, rating) WHERE rated_at IS NOT NULL;
                    CREATE INDEX conversations_waiting ON conversations (app, waiting_since) WHERE closed_at IS NULL AND waiting_since IS NOT NULL;
                    CREATE INDEX conversations_due ON conversations (close_due_at) WHERE closed_at IS NULL AND close_due_at IS NOT NULL;
                    CREATE INDEX conversations_unreminded ON conversations (waiting_since)
                        WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL;
                    CREATE INDEX conversations_idle ON conversations (last_support_at)
                        WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL;
                    """)
        }
    }

    static let conversationColumns = """
        id, owner, thread_id, opened_at, first_response_at, last_user_at, last_support_at, waiting_since, reminded_at, reminders, \
        close_due_at, closed_at, closed_by, rating_requested_at, rating, rating_comment, rated_at, response_seconds
        """

    static func conversation(_ row: Row) -> ConversationRecord? {
        guard let owner = UserID(storageKey: row[1]) else { return nil }
        func date(_ index: Int) -> Date? { (row[index] as Double?).map(Date.init(timeIntervalSince1970:)) }
        let rating: ConversationRating? = (row[14] as Int?).flatMap { score in
            date(16).map { ConversationRating(score: score, comment: row[15], ratedAt: $0) }
        }
        var record = ConversationRecord(
            id: row[0], owner: owner, thread: (row[2] as Int64?).map(Snowflake.init(column:)),
            openedAt: date(3) ?? Date(timeIntervalSince1970: 0), firstResponseAt: date(4), lastUserAt: date(5), lastSupportAt: date(6),
            waitingSince: date(7), remindedAt: date(8), reminders: row[9], closeDueAt: date(10), closedAt: date(11),
            closedBy: (row[12] as String?).flatMap(ConversationCloser.init(rawValue:)), ratingRequestedAt: date(13), rating: rating)
        record.responseSeconds = row[17]
        return record
    }

    private static func thread(_ id: Snowflake?) -> Int64? { id?.column }

    private static func open(_ owner: UserID, _ db: Database) throws -> ConversationRecord? {
        try Row.fetchOne(db, sql: "SELECT \(conversationColumns) FROM conversations WHERE owner = ? AND closed_at IS NULL", arguments: [owner.rawValue])
            .flatMap(conversation)
    }

    private static func conversation(id: Int64, _ db: Database) throws -> ConversationRecord? {
        try Row.fetchOne(db, sql: "SELECT \(conversationColumns) FROM conversations WHERE id = ?", arguments: [id]).flatMap(conversation)
    }

    public func conversationUserWrote(_ owner: UserID, thread: Snowflake?, at date: Date) async throws -> ConversationUserWrite {
        let at = date.timeIntervalSince1970
        return try await write { db in
            if let current = try Self.open(owner, db) {
                try db.execute(
                    sql: """
                        UPDATE conversations SET last_user_at = max(coalesce(last_user_at, ?), ?), waiting_since = coalesce(waiting_since, ?),
                            close_due_at = NULL, thread_id = coalesce(?, thread_id) WHERE id = ?
                        """,
                    arguments: [at, at, at, Self.thread(thread), current.id])
                guard let now = try Self.conversation(id: current.id, db) else { throw ConversationMissing() }
                return ConversationUserWrite(conversation: now, opened: false, cancelledClose: current.closeDueAt)
            }
            try db.execute(
                sql: "INSERT INTO conversations (owner, app, thread_id, opened_at, last_user_at, waiting_since) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [owner.rawValue, owner.app.rawValue, Self.thread(thread), at, at, at])
            guard let opened = try Self.conversation(id: db.lastInsertedRowID, db) else { throw ConversationMissing() }
            return ConversationUserWrite(conversation: opened, opened: true, cancelledClose: nil)
        }
    }

    public func conversationSupportWrote(
        _ owner: UserID, thread: Snowflake?, at date: Date, byAgent: Bool, responseSeconds: (@Sendable (Date) -> Double)?
    ) async throws -> ConversationRecord? {
        let at = date.timeIntervalSince1970
        return try await write { db in
            guard let current = try Self.open(owner, db) else { return nil }
            if byAgent {
                let seconds = current.firstResponseAt == nil ? (responseSeconds?(current.openedAt) ?? max(0, at - current.openedAt.timeIntervalSince1970)) : nil
                try db.execute(
                    sql: """
                        UPDATE conversations SET first_response_at = coalesce(first_response_at, ?), response_seconds = coalesce(response_seconds, ?),
                            last_support_at = max(coalesce(last_support_at, ?), ?), waiting_since = NULL, reminded_at = NULL,
                            thread_id = coalesce(?, thread_id) WHERE id = ?
                        """,
                    arguments: [at, seconds, at, at, Self.thread(thread), current.id])
            } else {
                try db.execute(sql: "UPDATE conversations SET thread_id = coalesce(?, thread_id) WHERE id = ?", arguments: [Self.thread(thread), current.id])
            }
            return try Self.conversation(id: current.id, db)
        }
    }

    public func closeConversation(_ owner: UserID, at date: Date, by closer: ConversationCloser, dueBy: Date?) async throws -> ConversationRecord? {
        let at = date.timeIntervalSince1970
        return try await write { db in
            guard let current = try Self.open(owner, db) else { return nil }
            if let dueBy, (current.closeDueAt.map { $0 > dueBy } ?? true) { return nil }
            try db.execute(
                sql: """
                    UPDATE conversations SET closed_at = ?, closed_by = ?, waiting_since = NULL, close_due_at = NULL,
                        rating_requested_at = CASE WHEN first_response_at IS NOT NULL AND rating IS NULL THEN ? END WHERE id = ?
                    """,
                arguments: [at, closer.rawValue, at, current.id])
            return try Self.conversation(id: current.id, db)
        }
    }

    public func reopenConversation(_ owner: UserID, at date: Date) async throws -> ConversationRecord? {
        try await write { db in
            guard try Self.open(owner, db) == nil,
                let latest = try Row.fetchOne(
                    db, sql: "SELECT \(Self.conversationColumns) FROM conversations WHERE owner = ? ORDER BY id DESC LIMIT 1", arguments: [owner.rawValue]
                ).flatMap(Self.conversation)
            else { return nil }
            // Back to support: it waits for an answer again (so no auto-close takes it at once).
            try db.execute(
                sql: """
                    UPDATE conversations SET closed_at = NULL, closed_by = NULL, rating_requested_at = NULL, waiting_since = ?, reminded_at = NULL
                    WHERE id = ?
                    """,
                arguments: [date.timeIntervalSince1970, latest.id])
            return try Self.conversation(id: latest.id, db)
        }
    }

    public func scheduleConversationClose(_ owner: UserID, at due: Date?) async throws -> ConversationRecord? {
        try await write { db in
            guard let current = try Self.open(owner, db) else { return nil }
            try db.execute(sql: "UPDATE conversations SET close_due_at = ? WHERE id = ?", arguments: [due?.timeIntervalSince1970, current.id])
            return try Self.conversation(id: current.id, db)
        }
    }

    public func latestConversation(of owner: UserID) async throws -> ConversationRecord? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.conversationColumns) FROM conversations WHERE owner = ? ORDER BY id DESC LIMIT 1", arguments: [owner.rawValue]
            ).flatMap(Self.conversation)
        }
    }

    public func rateConversation(_ id: Int64, owner: UserID, score: Int, comment: String?, at date: Date) async throws -> ConversationRatingOutcome {
        try await write { db in
            guard let current = try Self.conversation(id: id, db), current.owner == owner else { return .notRequested }
            if current.rating != nil { return .alreadyRated(current) }
            guard current.ratingRequestedAt != nil else { return .notRequested }
            try db.execute(
                sql: "UPDATE conversations SET rating = ?, rating_comment = ?, rated_at = ? WHERE id = ? AND rating IS NULL",
                arguments: [score, comment, date.timeIntervalSince1970, id])
            guard let rated = try Self.conversation(id: id, db) else { throw ConversationMissing() }
            return .rated(rated)
        }
    }

    public func markConversationReminded(_ id: Int64, waitingSince: Date, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE conversations SET reminded_at = ?, reminders = reminders + 1
                    WHERE id = ? AND closed_at IS NULL AND waiting_since = ? AND reminded_at IS NULL
                    """,
                arguments: [date.timeIntervalSince1970, id, waitingSince.timeIntervalSince1970])
            return db.changesCount == 1
        }
    }

    public func forgetConversationReminder(_ id: Int64, at date: Date) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE conversations SET reminded_at = NULL, reminders = max(reminders - 1, 0) WHERE id = ? AND reminded_at = ?",
                arguments: [id, date.timeIntervalSince1970])
        }
    }

    public func dueConversationCloses(at date: Date, limit: Int) async throws -> [ConversationRecord] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.conversationColumns) FROM conversations
                    WHERE closed_at IS NULL AND close_due_at IS NOT NULL AND close_due_at <= ? ORDER BY close_due_at LIMIT ?
                    """,
                arguments: [date.timeIntervalSince1970, max(0, limit)]
            ).compactMap(Self.conversation)
        }
    }

    public func unremindedWaits(startedBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.conversationColumns) FROM conversations
                    WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL AND waiting_since < ? ORDER BY waiting_since LIMIT ?
                    """,
                arguments: [date.timeIntervalSince1970, max(0, limit)]
            ).compactMap(Self.conversation)
        }
    }

    public func idleAnsweredConversations(answeredBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.conversationColumns) FROM conversations
                    WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL AND last_support_at < ?
                    ORDER BY last_support_at LIMIT ?
                    """,
                arguments: [date.timeIntervalSince1970, max(0, limit)]
            ).compactMap(Self.conversation)
        }
    }

    public func conversationWorkDates() async throws -> ConversationWorkDates {
        try read { db in
            func first(_ sql: String) throws -> Date? { try (Double.fetchOne(db, sql: sql)).map(Date.init(timeIntervalSince1970:)) }
            return ConversationWorkDates(
                closeDue: try first("SELECT min(close_due_at) FROM conversations WHERE closed_at IS NULL AND close_due_at IS NOT NULL"),
                oldestUnremindedWait: try first(
                    "SELECT min(waiting_since) FROM conversations WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL"),
                oldestIdleAnswer: try first(
                    "SELECT min(last_support_at) FROM conversations WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL"))
        }
    }

    public func conversationTotals(app: AppID, since: Date, until: Date) async throws -> ConversationTotals {
        let (from, to, app) = (since.timeIntervalSince1970, until.timeIntervalSince1970, app.rawValue)
        return try read { db in
            var totals = ConversationTotals()
            if let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), count(first_response_at), coalesce(sum(reminders), 0) FROM conversations
                    WHERE app = ? AND opened_at >= ? AND opened_at < ?
                    """,
                arguments: [app, from, to])
            {
                (totals.opened, totals.answered, totals.reminders) = (row[0], row[1], row[2])
            }
            if let row = try Row.fetchOne(
                db, sql: "SELECT count(*), min(waiting_since) FROM conversations WHERE app = ? AND closed_at IS NULL AND waiting_since IS NOT NULL",
                arguments: [app])
            {
                totals.waitingNow = row[0]
                totals.longestWaitSince = (row[1] as Double?).map(Date.init(timeIntervalSince1970:))
            }
            if let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(rating), 0), count(CASE WHEN rating >= 4 THEN 1 END) FROM conversations
                    WHERE app = ? AND rated_at IS NOT NULL AND rated_at >= ? AND rated_at < ?
                    """,
                arguments: [app, from, to])
            {
                (totals.ratings, totals.ratingSum, totals.goodRatings) = (row[0], row[1], row[2])
            }
            // One column each, read by GRDB's fast path for doubles from the covering indexes, and
            // sorted here (a sort in SQLite took longer than the read).
            totals.responseSeconds = try Double.fetchAll(
                db,
                sql: """
                    SELECT response_seconds FROM conversations
                    WHERE app = ? AND opened_at >= ? AND opened_at < ? AND response_seconds IS NOT NULL
                    """,
                arguments: [app, from, to]
            ).sorted()
            totals.closeSeconds = try Double.fetchAll(
                db,
                sql: """
                    SELECT closed_at - opened_at FROM conversations WHERE app = ? AND closed_at IS NOT NULL AND closed_at >= ? AND closed_at < ?
                    """,
                arguments: [app, from, to]
            ).sorted()
            totals.closed = totals.closeSeconds.count
            return totals
        }
    }

    static func eraseConversations(of id: UserID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM conversations WHERE owner = ?", arguments: [id.rawValue])
    }
}

/// A conversation row that was just written could not be read back (the database changed under
/// the writer: never expected).
struct ConversationMissing: Error {}
