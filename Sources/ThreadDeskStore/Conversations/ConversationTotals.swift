import Foundation

/// What support's numbers for a window are computed from, read by SQL: counts and sums where SQL
/// gives them, and the few per-conversation times the percentiles need (SQLite has no
/// percentile function, and first responses count support hours, which only the server knows).
public struct ConversationTotals: Sendable, Hashable {
    /// A conversation opened in the window that an agent answered: its opening and first answer.
    public struct Response: Sendable, Hashable {
        public var openedAt: Date
        public var firstResponseAt: Date

        public init(openedAt: Date, firstResponseAt: Date) {
            (self.openedAt, self.firstResponseAt) = (openedAt, firstResponseAt)
        }
    }

    /// Conversations opened in the window.
    public var opened: Int
    /// Of those, the ones an agent answered.
    public var answered: Int
    /// Open conversations waiting for support now (whenever they began).
    public var waitingNow: Int
    /// The start of the longest wait now.
    public var longestWaitSince: Date?
    /// Conversations closed in the window.
    public var closed: Int
    /// Reminders sent in conversations opened in the window.
    public var reminders: Int
    /// Ratings given in the window: how many, their sum, how many were 4 or 5.
    public var ratings: Int
    public var ratingSum: Int
    public var goodRatings: Int
    /// First answers of the conversations opened in the window, by opening.
    public var responses: [Response]
    /// Seconds from opening to close of the conversations closed in the window, shortest first.
    public var closeSeconds: [Double]

    public init(
        opened: Int = 0, answered: Int = 0, waitingNow: Int = 0, longestWaitSince: Date? = nil, closed: Int = 0, reminders: Int = 0,
        ratings: Int = 0, ratingSum: Int = 0, goodRatings: Int = 0, responses: [Response] = [], closeSeconds: [Double] = []
    ) {
        (self.opened, self.answered, self.waitingNow, self.longestWaitSince, self.closed) = (opened, answered, waitingNow, longestWaitSince, closed)
        (self.reminders, self.ratings, self.ratingSum, self.goodRatings) = (reminders, ratings, ratingSum, goodRatings)
        (self.responses, self.closeSeconds) = (responses, closeSeconds)
    }
}
