import Foundation

/// What support's numbers for a window are computed from, read by SQL: counts and sums, and the
/// two columns the percentiles are taken from, sorted by the database (SQLite has no percentile
/// function; one sorted column costs little to read on either store).
public struct ConversationTotals: Sendable, Hashable {
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
    /// Seconds to the first answer (support hours, as kept when it came) of the conversations
    /// opened in the window, shortest first.
    public var responseSeconds: [Double]
    /// Seconds from opening to close of the conversations closed in the window, shortest first.
    public var closeSeconds: [Double]

    public init(
        opened: Int = 0, answered: Int = 0, waitingNow: Int = 0, longestWaitSince: Date? = nil, closed: Int = 0, reminders: Int = 0,
        ratings: Int = 0, ratingSum: Int = 0, goodRatings: Int = 0, responseSeconds: [Double] = [], closeSeconds: [Double] = []
    ) {
        (self.opened, self.answered, self.waitingNow, self.longestWaitSince, self.closed) = (opened, answered, waitingNow, longestWaitSince, closed)
        (self.reminders, self.ratings, self.ratingSum, self.goodRatings) = (reminders, ratings, ratingSum, goodRatings)
        (self.responseSeconds, self.closeSeconds) = (responseSeconds, closeSeconds)
    }
}
