import DiscordREST
import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    /// Conversations, their waits, closes and ratings (schema 17).
    static let conversationSchema = [
        """
        CREATE TABLE IF NOT EXISTS conversations (
            id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, app TEXT NOT NULL, thread_id BIGINT, opened_at DOUBLE PRECISION NOT NULL,
            first_response_at DOUBLE PRECISION, response_seconds DOUBLE PRECISION, last_user_at DOUBLE PRECISION, last_support_at DOUBLE PRECISION, waiting_since DOUBLE PRECISION,
            reminded_at DOUBLE PRECISION, reminders INTEGER NOT NULL DEFAULT 0, close_due_at DOUBLE PRECISION, closed_at DOUBLE PRECISION,
            closed_by TEXT, rating_requested_at DOUBLE PRECISION, rating INTEGER, rating_comment TEXT, rated_at DOUBLE PRECISION)
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS conversations_open ON conversations (owner) WHERE closed_at IS NULL",
        "CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner, id)",
        // Covering the numbers' reads: a year of an app's conversations is read from the index alone.
        "CREATE INDEX IF NOT EXISTS conversations_opened ON conversations (app, opened_at, first_response_at, response_seconds, reminders)",
        "CREATE INDEX IF NOT EXISTS conversations_closed ON conversations (app, closed_at, opened_at) WHERE closed_at IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS conversations_rated ON conversations (app, rated_at, rating) WHERE rated_at IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS conversations_waiting ON conversations (app, waiting_since) WHERE closed_at IS NULL AND waiting_since IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS conversations_due ON conversations (close_due_at) WHERE closed_at IS NULL AND close_due_at IS NOT NULL",
        """
        CREATE INDEX IF NOT EXISTS conversations_unreminded ON conversations (waiting_since)
            WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL
        """,
        """
        CREATE INDEX IF NOT EXISTS conversations_idle ON conversations (last_support_at)
            WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL
        """,
    ]

    private static let columns = """
        id, owner, thread_id, opened_at, first_response_at, last_user_at, last_support_at, waiting_since, reminded_at, reminders, \
        close_due_at, closed_at, closed_by, rating_requested_at, rating, rating_comment, rated_at, response_seconds
        """

    private static func conversation(_ row: PostgresRow) throws -> ConversationRecord? {
        let cells = row.makeRandomAccess()
        guard let owner = UserID(storageKey: try cells[1].decode(String.self)) else { return nil }
        func date(_ index: Int) throws -> Date? { try cells[index].decode(Double?.self).map(Date.init(timeIntervalSince1970:)) }
        var rating: ConversationRating?
        if let score = try cells[14].decode(Int?.self), let ratedAt = try date(16) {
            rating = ConversationRating(score: score, comment: try cells[15].decode(String?.self), ratedAt: ratedAt)
        }
        var record = ConversationRecord(
            id: try cells[0].decode(Int64.self), owner: owner, thread: try cells[2].decode(Int64?.self).map(Snowflake.init(column:)),
            openedAt: try date(3) ?? Date(timeIntervalSince1970: 0), firstResponseAt: try date(4), lastUserAt: try date(5),
            lastSupportAt: try date(6), waitingSince: try date(7), remindedAt: try date(8), reminders: try cells[9].decode(Int.self),
            closeDueAt: try date(10), closedAt: try date(11), closedBy: try cells[12].decode(String?.self).flatMap(ConversationCloser.init(rawValue:)),
            ratingRequestedAt: try date(13), rating: rating)
        record.responseSeconds = try cells[17].decode(Double?.self)
        return record
    }

    private func conversations(_ query: PostgresQuery) async throws -> [ConversationRecord] {
        try await self.query(query).compactMap(Self.conversation)
    }

    private func openConversation(_ owner: UserID) async throws -> ConversationRecord? {
        try await conversations("SELECT \(unescaped: Self.columns) FROM conversations WHERE owner = \(owner.rawValue) AND closed_at IS NULL").first
    }

    public func conversationUserWrote(_ owner: UserID, thread: Snowflake?, at date: Date) async throws -> ConversationUserWrite {
        let (at, thread) = (date.timeIntervalSince1970, thread?.column)
        // Every change of a user's conversation runs under the user's lock; the unique index of
        // open conversations still keeps a second one from ever opening.
        for _ in 0..<2 {
            if let current = try await openConversation(owner) {
                let updated = try await conversations(
                    """
                    UPDATE conversations SET last_user_at = GREATEST(coalesce(last_user_at, \(at)), \(at)),
                        waiting_since = coalesce(waiting_since, \(at)), close_due_at = NULL, thread_id = coalesce(\(thread), thread_id)
                    WHERE id = \(current.id) RETURNING \(unescaped: Self.columns)
                    """)
                if let now = updated.first { return ConversationUserWrite(conversation: now, opened: false, cancelledClose: current.closeDueAt) }
                continue
            }
            let inserted = try await conversations(
                """
                INSERT INTO conversations (owner, app, thread_id, opened_at, last_user_at, waiting_since)
                VALUES (\(owner.rawValue), \(owner.app.rawValue), \(thread), \(at), \(at), \(at))
                ON CONFLICT (owner) WHERE closed_at IS NULL DO NOTHING RETURNING \(unescaped: Self.columns)
                """)
            if let opened = inserted.first { return ConversationUserWrite(conversation: opened, opened: true, cancelledClose: nil) }
        }
        throw ConversationMissing()
    }

    public func conversationSupportWrote(
        _ owner: UserID, thread: Snowflake?, at date: Date, byAgent: Bool, responseSeconds: (@Sendable (Date) -> Double)?
    ) async throws -> ConversationRecord? {
        let (at, thread) = (date.timeIntervalSince1970, thread?.column)
        if byAgent {
            // Under the user's lock: the open conversation read here is the one updated.
            let current = try await openConversation(owner)
            let seconds = current.flatMap { $0.firstResponseAt == nil ? (responseSeconds?($0.openedAt) ?? max(0, at - $0.openedAt.timeIntervalSince1970)) : nil }
            return try await conversations(
                """
                UPDATE conversations SET first_response_at = coalesce(first_response_at, \(at)),
                    response_seconds = coalesce(response_seconds, \(seconds)::DOUBLE PRECISION),
                    last_support_at = GREATEST(coalesce(last_support_at, \(at)), \(at)), waiting_since = NULL, reminded_at = NULL,
                    thread_id = coalesce(\(thread), thread_id)
                WHERE owner = \(owner.rawValue) AND closed_at IS NULL RETURNING \(unescaped: Self.columns)
                """
            ).first
        }
        return try await conversations(
            """
            UPDATE conversations SET thread_id = coalesce(\(thread), thread_id)
            WHERE owner = \(owner.rawValue) AND closed_at IS NULL RETURNING \(unescaped: Self.columns)
            """
        ).first
    }

    public func closeConversation(_ owner: UserID, at date: Date, by closer: ConversationCloser, dueBy: Date?) async throws -> ConversationRecord? {
        let at = date.timeIntervalSince1970
        let due = dueBy?.timeIntervalSince1970
        return try await conversations(
            """
            UPDATE conversations SET closed_at = \(at), closed_by = \(closer.rawValue), waiting_since = NULL, close_due_at = NULL,
                rating_requested_at = CASE WHEN first_response_at IS NOT NULL AND rating IS NULL THEN \(at)::DOUBLE PRECISION END
            WHERE owner = \(owner.rawValue) AND closed_at IS NULL
                AND (\(due)::DOUBLE PRECISION IS NULL OR (close_due_at IS NOT NULL AND close_due_at <= \(due)::DOUBLE PRECISION))
            RETURNING \(unescaped: Self.columns)
            """
        ).first
    }

    public func reopenConversation(_ owner: UserID, at date: Date) async throws -> ConversationRecord? {
        guard try await openConversation(owner) == nil else { return nil }
        return try await conversations(
            """
            UPDATE conversations SET closed_at = NULL, closed_by = NULL, rating_requested_at = NULL, waiting_since = \(date.timeIntervalSince1970),
                reminded_at = NULL
            WHERE id = (SELECT max(id) FROM conversations WHERE owner = \(owner.rawValue)) RETURNING \(unescaped: Self.columns)
            """
        ).first
    }

    public func scheduleConversationClose(_ owner: UserID, at due: Date?) async throws -> ConversationRecord? {
        try await conversations(
            """
            UPDATE conversations SET close_due_at = \(due?.timeIntervalSince1970)::DOUBLE PRECISION
            WHERE owner = \(owner.rawValue) AND closed_at IS NULL RETURNING \(unescaped: Self.columns)
            """
        ).first
    }

    public func latestConversation(of owner: UserID) async throws -> ConversationRecord? {
        try await conversations("SELECT \(unescaped: Self.columns) FROM conversations WHERE owner = \(owner.rawValue) ORDER BY id DESC LIMIT 1").first
    }

    public func rateConversation(_ id: Int64, owner: UserID, score: Int, comment: String?, at date: Date) async throws -> ConversationRatingOutcome {
        let rated = try await conversations(
            """
            UPDATE conversations SET rating = \(score), rating_comment = \(comment), rated_at = \(date.timeIntervalSince1970)
            WHERE id = \(id) AND owner = \(owner.rawValue) AND rating IS NULL AND rating_requested_at IS NOT NULL
            RETURNING \(unescaped: Self.columns)
            """)
        if let rated = rated.first { return .rated(rated) }
        let current = try await conversations("SELECT \(unescaped: Self.columns) FROM conversations WHERE id = \(id) AND owner = \(owner.rawValue)")
        if let current = current.first, current.rating != nil { return .alreadyRated(current) }
        return .notRequested
    }

    public func markConversationReminded(_ id: Int64, waitingSince: Date, at date: Date) async throws -> Bool {
        let rows = try await query(
            """
            UPDATE conversations SET reminded_at = \(date.timeIntervalSince1970), reminders = reminders + 1
            WHERE id = \(id) AND closed_at IS NULL AND waiting_since = \(waitingSince.timeIntervalSince1970) AND reminded_at IS NULL
            RETURNING id
            """)
        return rows.count == 1
    }

    public func forgetConversationReminder(_ id: Int64, at date: Date) async throws {
        try await query(
            """
            UPDATE conversations SET reminded_at = NULL, reminders = GREATEST(reminders - 1, 0)
            WHERE id = \(id) AND reminded_at = \(date.timeIntervalSince1970)
            """)
    }

    public func dueConversationCloses(at date: Date, limit: Int) async throws -> [ConversationRecord] {
        try await conversations(
            """
            SELECT \(unescaped: Self.columns) FROM conversations
            WHERE closed_at IS NULL AND close_due_at IS NOT NULL AND close_due_at <= \(date.timeIntervalSince1970) ORDER BY close_due_at LIMIT \(max(0, limit))
            """)
    }

    public func unremindedWaits(startedBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        try await conversations(
            """
            SELECT \(unescaped: Self.columns) FROM conversations
            WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL AND waiting_since < \(date.timeIntervalSince1970)
            ORDER BY waiting_since LIMIT \(max(0, limit))
            """)
    }

    public func idleAnsweredConversations(answeredBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        try await conversations(
            """
            SELECT \(unescaped: Self.columns) FROM conversations
            WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL AND last_support_at < \(date.timeIntervalSince1970)
            ORDER BY last_support_at LIMIT \(max(0, limit))
            """)
    }

    public func conversationWorkDates() async throws -> ConversationWorkDates {
        let rows = try await query(
            """
            SELECT (SELECT min(close_due_at) FROM conversations WHERE closed_at IS NULL AND close_due_at IS NOT NULL),
                (SELECT min(waiting_since) FROM conversations WHERE closed_at IS NULL AND waiting_since IS NOT NULL AND reminded_at IS NULL),
                (SELECT min(last_support_at) FROM conversations WHERE closed_at IS NULL AND waiting_since IS NULL AND last_support_at IS NOT NULL)
            """)
        guard let row = rows.first else { return ConversationWorkDates() }
        let (due, wait, idle) = try row.decode((Double?, Double?, Double?).self)
        return ConversationWorkDates(
            closeDue: due.map(Date.init(timeIntervalSince1970:)), oldestUnremindedWait: wait.map(Date.init(timeIntervalSince1970:)),
            oldestIdleAnswer: idle.map(Date.init(timeIntervalSince1970:)))
    }

    public func conversationTotals(app: AppID, since: Date, until: Date) async throws -> ConversationTotals {
        let (from, to, app) = (since.timeIntervalSince1970, until.timeIntervalSince1970, app.rawValue)
        var totals = ConversationTotals()
        // Counts in one statement; the times the percentiles need as arrays (one row each: a year
        // of a popular app is tens of thousands of them, and rows cost far more to decode).
        if let row = try await query(
            """
            SELECT * FROM
                (SELECT count(*)::BIGINT, count(first_response_at)::BIGINT, coalesce(sum(reminders), 0)::BIGINT FROM conversations
                    WHERE app = \(app) AND opened_at >= \(from) AND opened_at < \(to)) AS opened,
                (SELECT count(*)::BIGINT, min(waiting_since) FROM conversations
                    WHERE app = \(app) AND closed_at IS NULL AND waiting_since IS NOT NULL) AS waiting,
                (SELECT count(*)::BIGINT, coalesce(sum(rating), 0)::BIGINT, count(*) FILTER (WHERE rating >= 4)::BIGINT FROM conversations
                    WHERE app = \(app) AND rated_at IS NOT NULL AND rated_at >= \(from) AND rated_at < \(to)) AS rated
            """
        ).first {
            let (opened, answered, reminders, waiting, since, ratings, sum, good) = try row.decode(
                (Int64, Int64, Int64, Int64, Double?, Int64, Int64, Int64).self)
            (totals.opened, totals.answered, totals.reminders, totals.waitingNow) = (Int(opened), Int(answered), Int(reminders), Int(waiting))
            totals.longestWaitSince = since.map(Date.init(timeIntervalSince1970:))
            (totals.ratings, totals.ratingSum, totals.goodRatings) = (Int(ratings), Int(sum), Int(good))
        }
        if let row = try await query(
            """
            SELECT coalesce(array_agg(response_seconds), '{}') FROM conversations
            WHERE app = \(app) AND opened_at >= \(from) AND opened_at < \(to) AND response_seconds IS NOT NULL
            """
        ).first {
            totals.responseSeconds = try row.decode([Double].self).sorted()
        }
        if let row = try await query(
            """
            SELECT coalesce(array_agg(closed_at - opened_at), '{}') FROM conversations
            WHERE app = \(app) AND closed_at IS NOT NULL AND closed_at >= \(from) AND closed_at < \(to)
            """
        ).first {
            totals.closeSeconds = try row.decode([Double].self).sorted()
        }
        totals.closed = totals.closeSeconds.count
        return totals
    }

    static func eraseConversations(of id: UserID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.rows("DELETE FROM conversations WHERE owner = \(id.rawValue)", logger: logger)
    }
}
