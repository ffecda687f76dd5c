import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// Conversations in memory.
struct MemoryConversations {
    var rows: [Int64: ConversationRecord] = [:]
    var lastID: Int64 = 0

    func open(_ owner: UserID) -> ConversationRecord? { rows.values.first { $0.owner == owner && $0.isOpen } }

    func all(where include: (ConversationRecord) -> Bool, by key: (ConversationRecord) -> Date?, limit: Int) -> [ConversationRecord] {
        Array(rows.values.filter(include).sorted { (key($0) ?? .distantPast, $0.id) < (key($1) ?? .distantPast, $1.id) }.prefix(max(0, limit)))
    }

    mutating func erase(_ owner: UserID) { rows = rows.filter { $0.value.owner != owner } }
}

extension MemoryStore {
    public func conversationUserWrote(_ owner: UserID, thread: Snowflake?, at date: Date) async throws -> ConversationUserWrite {
        conversations.withLock { state in
            if var current = state.open(owner) {
                let cancelled = current.closeDueAt
                current.lastUserAt = max(current.lastUserAt ?? date, date)
                current.waitingSince = current.waitingSince ?? date
                current.closeDueAt = nil
                current.thread = thread ?? current.thread
                state.rows[current.id] = current
                return ConversationUserWrite(conversation: current, opened: false, cancelledClose: cancelled)
            }
            state.lastID += 1
            let opened = ConversationRecord(id: state.lastID, owner: owner, thread: thread, openedAt: date, lastUserAt: date, waitingSince: date)
            state.rows[opened.id] = opened
            return ConversationUserWrite(conversation: opened, opened: true, cancelledClose: nil)
        }
    }

    public func conversationSupportWrote(
        _ owner: UserID, thread: Snowflake?, at date: Date, byAgent: Bool, responseSeconds: (@Sendable (Date) -> Double)?
    ) async throws -> ConversationRecord? {
        conversations.withLock { state in
            guard var current = state.open(owner) else { return nil }
            if byAgent {
                if current.firstResponseAt == nil {
                    current.responseSeconds = responseSeconds?(current.openedAt) ?? max(0, date.timeIntervalSince(current.openedAt))
                }
                current.firstResponseAt = current.firstResponseAt ?? date
                current.lastSupportAt = max(current.lastSupportAt ?? date, date)
                (current.waitingSince, current.remindedAt) = (nil, nil)
            }
            current.thread = thread ?? current.thread
            state.rows[current.id] = current
            return current
        }
    }

    public func closeConversation(_ owner: UserID, at date: Date, by closer: ConversationCloser, dueBy: Date?) async throws -> ConversationRecord? {
        conversations.withLock { state in
            guard var current = state.open(owner) else { return nil }
            if let dueBy, current.closeDueAt.map({ $0 > dueBy }) ?? true { return nil }
            (current.closedAt, current.closedBy, current.waitingSince, current.closeDueAt) = (date, closer, nil, nil)
            current.ratingRequestedAt = current.isAnswered && current.rating == nil ? date : nil
            state.rows[current.id] = current
            return current
        }
    }

    public func reopenConversation(_ owner: UserID, at date: Date) async throws -> ConversationRecord? {
        conversations.withLock { state in
            guard state.open(owner) == nil, var latest = state.rows.values.filter({ $0.owner == owner }).max(by: { $0.id < $1.id }) else { return nil }
            (latest.closedAt, latest.closedBy, latest.ratingRequestedAt, latest.waitingSince, latest.remindedAt) = (nil, nil, nil, date, nil)
            state.rows[latest.id] = latest
            return latest
        }
    }

    public func scheduleConversationClose(_ owner: UserID, at due: Date?) async throws -> ConversationRecord? {
        conversations.withLock { state in
            guard var current = state.open(owner) else { return nil }
            current.closeDueAt = due
            state.rows[current.id] = current
            return current
        }
    }

    public func latestConversation(of owner: UserID) async throws -> ConversationRecord? {
        conversations.withLock { state in state.rows.values.filter { $0.owner == owner }.max { $0.id < $1.id } }
    }

    public func rateConversation(_ id: Int64, owner: UserID, score: Int, comment: String?, at date: Date) async throws -> ConversationRatingOutcome {
        conversations.withLock { state in
            guard var current = state.rows[id], current.owner == owner else { return .notRequested }
            if current.rating != nil { return .alreadyRated(current) }
            guard current.ratingRequestedAt != nil else { return .notRequested }
            current.rating = ConversationRating(score: score, comment: comment, ratedAt: date)
            state.rows[id] = current
            return .rated(current)
        }
    }

    public func markConversationReminded(_ id: Int64, waitingSince: Date, at date: Date) async throws -> Bool {
        conversations.withLock { state in
            guard var current = state.rows[id], current.isOpen, current.waitingSince == waitingSince, current.remindedAt == nil else { return false }
            current.remindedAt = date
            current.reminders += 1
            state.rows[id] = current
            return true
        }
    }

    public func forgetConversationReminder(_ id: Int64, at date: Date) async throws {
        conversations.withLock { state in
            guard var current = state.rows[id], current.remindedAt == date else { return }
            current.remindedAt = nil
            current.reminders = max(current.reminders - 1, 0)
            state.rows[id] = current
        }
    }

    public func dueConversationCloses(at date: Date, limit: Int) async throws -> [ConversationRecord] {
        conversations.withLock { state in
            state.all(where: { $0.isOpen && ($0.closeDueAt.map { $0 <= date } ?? false) }, by: \.closeDueAt, limit: limit)
        }
    }

    public func unremindedWaits(startedBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        conversations.withLock { state in
            state.all(where: { $0.isOpen && $0.remindedAt == nil && ($0.waitingSince.map { $0 < date } ?? false) }, by: \.waitingSince, limit: limit)
        }
    }

    public func idleAnsweredConversations(answeredBefore date: Date, limit: Int) async throws -> [ConversationRecord] {
        conversations.withLock { state in
            state.all(where: { $0.isOpen && $0.waitingSince == nil && ($0.lastSupportAt.map { $0 < date } ?? false) }, by: \.lastSupportAt, limit: limit)
        }
    }

    public func conversationWorkDates() async throws -> ConversationWorkDates {
        conversations.withLock { state in
            let open = state.rows.values.filter(\.isOpen)
            return ConversationWorkDates(
                closeDue: open.compactMap(\.closeDueAt).min(),
                oldestUnremindedWait: open.filter { $0.remindedAt == nil }.compactMap(\.waitingSince).min(),
                oldestIdleAnswer: open.filter { $0.waitingSince == nil }.compactMap(\.lastSupportAt).min())
        }
    }

    public func conversationTotals(app: AppID, since: Date, until: Date) async throws -> ConversationTotals {
        conversations.withLock { state in
            let mine = state.rows.values.filter { $0.owner.app == app }
            let opened = mine.filter { $0.openedAt >= since && $0.openedAt < until }
            let waiting = mine.filter { $0.isOpen && $0.waitingSince != nil }
            let rated = mine.compactMap(\.rating).filter { $0.ratedAt >= since && $0.ratedAt < until }
            let closed = mine.filter { ($0.closedAt.map { $0 >= since && $0 < until }) ?? false }
            return ConversationTotals(
                opened: opened.count, answered: opened.filter(\.isAnswered).count, waitingNow: waiting.count,
                longestWaitSince: waiting.compactMap(\.waitingSince).min(), closed: closed.count, reminders: opened.reduce(0) { $0 + $1.reminders },
                ratings: rated.count, ratingSum: rated.reduce(0) { $0 + $1.score }, goodRatings: rated.filter { $0.score >= 4 }.count,
                responseSeconds: opened.compactMap(\.responseSeconds).sorted(),
                closeSeconds: closed.compactMap { conversation in conversation.closedAt.map { $0.timeIntervalSince(conversation.openedAt) } }.sorted())
        }
    }
}
