import DiscordREST
import Foundation
import ThreadDeskCore

/// One conversation of a user with support: from the user's first message (or their first after
/// a close) to its close. A user has at most one open conversation; the closed ones stay for
/// support's numbers until the user is erased.
public struct ConversationRecord: Sendable, Hashable {
    public var id: Int64
    public var owner: UserID
    /// The thread it was held in, as last known.
    public var thread: Snowflake?
    public var openedAt: Date
    /// An agent's first answer (automatic answers do not count).
    public var firstResponseAt: Date?
    /// Seconds from the opening to the first answer, in the app's support hours as they were then.
    public var responseSeconds: Double?
    public var lastUserAt: Date?
    /// An agent's last answer.
    public var lastSupportAt: Date?
    /// The user wrote and no agent has answered since; nil while nobody waits.
    public var waitingSince: Date?
    /// When the current wait was reminded of (one reminder per wait).
    public var remindedAt: Date?
    /// Reminders sent in this conversation.
    public var reminders: Int
    /// `/close in:`: when it closes unless the user writes first.
    public var closeDueAt: Date?
    public var closedAt: Date?
    public var closedBy: ConversationCloser?
    /// When the user was asked for a rating (a closed conversation an agent answered).
    public var ratingRequestedAt: Date?
    public var rating: ConversationRating?

    public init(
        id: Int64, owner: UserID, thread: Snowflake?, openedAt: Date, firstResponseAt: Date? = nil, responseSeconds: Double? = nil,
        lastUserAt: Date? = nil,
        lastSupportAt: Date? = nil, waitingSince: Date? = nil, remindedAt: Date? = nil, reminders: Int = 0, closeDueAt: Date? = nil,
        closedAt: Date? = nil, closedBy: ConversationCloser? = nil, ratingRequestedAt: Date? = nil, rating: ConversationRating? = nil
    ) {
        (self.id, self.owner, self.thread, self.openedAt, self.firstResponseAt) = (id, owner, thread, openedAt, firstResponseAt)
        self.responseSeconds = responseSeconds
        (self.lastUserAt, self.lastSupportAt, self.waitingSince, self.remindedAt) = (lastUserAt, lastSupportAt, waitingSince, remindedAt)
        (self.reminders, self.closeDueAt, self.closedAt, self.closedBy) = (reminders, closeDueAt, closedAt, closedBy)
        (self.ratingRequestedAt, self.rating) = (ratingRequestedAt, rating)
    }

    public var isOpen: Bool { closedAt == nil }
    /// Whether an agent answered it (it may be rated once closed).
    public var isAnswered: Bool { firstResponseAt != nil }
}

/// Who closed a conversation.
public enum ConversationCloser: String, Sendable, Hashable, Codable {
    /// `/close`.
    case agent
    /// `/close in:`, when its time came.
    case scheduled
    /// `AUTO_CLOSE_DAYS`: support answered last and the user left it alone.
    case auto
}

/// The user's rating of a closed conversation.
public struct ConversationRating: Sendable, Hashable {
    /// 1…5.
    public var score: Int
    public var comment: String?
    public var ratedAt: Date

    public init(score: Int, comment: String?, ratedAt: Date) {
        (self.score, self.comment, self.ratedAt) = (score, comment, ratedAt)
    }
}

/// What the user's message did to their conversation.
public struct ConversationUserWrite: Sendable, Hashable {
    public var conversation: ConversationRecord
    /// A new conversation began with it.
    public var opened: Bool
    /// The scheduled close it cancelled (its due date).
    public var cancelledClose: Date?

    public init(conversation: ConversationRecord, opened: Bool, cancelledClose: Date?) {
        (self.conversation, self.opened, self.cancelledClose) = (conversation, opened, cancelledClose)
    }
}

/// What rating a conversation came to.
public enum ConversationRatingOutcome: Sendable, Hashable {
    case rated(ConversationRecord)
    /// Rated before: the first rating stands.
    case alreadyRated(ConversationRecord)
    /// No such conversation of the user's waits for a rating.
    case notRequested
}

/// When the conversations' timers next have work, as far as the store can tell (reminders also
/// depend on support hours, which only the server knows).
public struct ConversationWorkDates: Sendable, Hashable {
    /// The earliest scheduled close.
    public var closeDue: Date?
    /// The earliest start of a wait not reminded of yet.
    public var oldestUnremindedWait: Date?
    /// The earliest last answer of an open conversation nobody waits in (auto-close).
    public var oldestIdleAnswer: Date?

    public init(closeDue: Date? = nil, oldestUnremindedWait: Date? = nil, oldestIdleAnswer: Date? = nil) {
        (self.closeDue, self.oldestUnremindedWait, self.oldestIdleAnswer) = (closeDue, oldestUnremindedWait, oldestIdleAnswer)
    }
}

/// The conversations' lifecycle, kept per user under the user's lock (`withUser`), and support's
/// numbers computed from it. Every change is one conditional statement, so two replicas acting on
/// one conversation (a timer and the user) never both win.
public protocol ConversationRecords: Sendable {
    /// The user wrote at `date` in `thread`: opens a conversation when none is open, starts a wait
    /// when none runs, and cancels a scheduled close.
    func conversationUserWrote(_ owner: UserID, thread: Snowflake?, at date: Date) async throws -> ConversationUserWrite
    /// Support wrote at `date`: an agent's answer (`byAgent`) ends the wait and counts as the
    /// first response; an automatic one (the away message) only keeps the thread. Nil when the user
    /// has no open conversation.
    /// - Parameter responseSeconds: The support time between an opening and `date` (the app's
    ///   hours), kept with a first response; wall-clock seconds when nil.
    @discardableResult
    func conversationSupportWrote(
        _ owner: UserID, thread: Snowflake?, at date: Date, byAgent: Bool, responseSeconds: (@Sendable (_ openedAt: Date) -> Double)?
    ) async throws -> ConversationRecord?
    /// Closes the user's open conversation: asks for a rating when an agent answered it. Nil when
    /// none is open. With `dueBy`, only a scheduled close due by then (the timer's).
    func closeConversation(_ owner: UserID, at date: Date, by closer: ConversationCloser, dueBy: Date?) async throws -> ConversationRecord?
    /// `/reopen`: the user's latest conversation open again and waiting for support (nil when it
    /// is open already or none exists); a rating it asked for is no longer asked.
    func reopenConversation(_ owner: UserID, at date: Date) async throws -> ConversationRecord?
    /// `/close in:`: the open conversation closes at `due` (nil cancels). Nil when none is open.
    func scheduleConversationClose(_ owner: UserID, at due: Date?) async throws -> ConversationRecord?
    /// The user's most recent conversation.
    func latestConversation(of owner: UserID) async throws -> ConversationRecord?
    /// Rates conversation `id` of `owner`'s, once.
    func rateConversation(_ id: Int64, owner: UserID, score: Int, comment: String?, at date: Date) async throws -> ConversationRatingOutcome
    /// Notes the reminder of the wait that began at `waitingSince`: false when that wait ended or
    /// was reminded of already (another replica).
    func markConversationReminded(_ id: Int64, waitingSince: Date, at date: Date) async throws -> Bool
    /// Takes a reminder back (it could not be posted): the wait may be reminded of again.
    func forgetConversationReminder(_ id: Int64, at date: Date) async throws

    /// Open conversations whose scheduled close is due at `date`, earliest first.
    func dueConversationCloses(at date: Date, limit: Int) async throws -> [ConversationRecord]
    /// Open conversations whose wait began before `date` and was not reminded of, oldest first.
    func unremindedWaits(startedBefore date: Date, limit: Int) async throws -> [ConversationRecord]
    /// Open conversations nobody waits in whose last answer (support's, after the user's last
    /// message) is before `date`, oldest first.
    func idleAnsweredConversations(answeredBefore date: Date, limit: Int) async throws -> [ConversationRecord]
    /// When the timers next have work.
    func conversationWorkDates() async throws -> ConversationWorkDates

    /// What support's numbers are computed from, for the conversations of `app` in
    /// `since..<until` (see ``ConversationTotals``).
    func conversationTotals(app: AppID, since: Date, until: Date) async throws -> ConversationTotals
}

extension ConversationRecords {
    /// Support wrote; a first response counted in wall-clock seconds.
    @discardableResult
    public func conversationSupportWrote(_ owner: UserID, thread: Snowflake?, at date: Date, byAgent: Bool) async throws -> ConversationRecord? {
        try await conversationSupportWrote(owner, thread: thread, at: date, byAgent: byAgent, responseSeconds: nil)
    }
}
