import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// Support's numbers for one app over the last days: what `/stats` shows and
/// `GET /internal/stats` answers. Counts, sums and the sorted columns come from the store's SQL
/// (`ConversationTotals`); the percentiles are the nearest ranks of those columns, so both stores
/// give the same figures. A first response is counted in the app's support hours as they were
/// when it came (all hours without them).
struct SupportStats: Sendable, Codable, Hashable {
    var app: String
    var days: Int
    var from: String
    var until: String
    var conversations: Conversations
    var firstResponse: Durations
    var timeToClose: Durations
    var ratings: Ratings
    var reminders: Int
    /// Whether first responses count support hours (the app has `SUPPORT_HOURS`).
    var supportHours: Bool
    /// The help center's most read articles of the window (`mostReadLimit`), with how many reads
    /// no message followed within 10 minutes: the articles that answer, and those that do not.
    var mostReadArticles: [HelpCenter.ReadArticle]

    struct Conversations: Sendable, Codable, Hashable {
        var opened: Int
        var answered: Int
        var closed: Int
        var waitingNow: Int
        /// Seconds the longest wait now has lasted (wall clock); nil when nobody waits.
        var longestWaitSeconds: Double?
    }

    /// Median and 90th percentile, in seconds; nil without any.
    struct Durations: Sendable, Codable, Hashable {
        var count: Int
        var medianSeconds: Double?
        var p90Seconds: Double?
    }

    struct Ratings: Sendable, Codable, Hashable {
        var count: Int
        var average: Double?
        /// The share of 4 and 5 (0…1).
        var goodShare: Double?
    }

    static let longestWindow = 366
    static let mostReadLimit = 5

    init(
        app: AppID, days: Int, totals: ConversationTotals, hours: SupportHours?, since: Date, until: Date, mostRead: [HelpCenter.ReadArticle] = []
    ) {
        self.app = app.rawValue
        self.days = days
        from = Self.iso(since)
        self.until = Self.iso(until)
        conversations = Conversations(
            opened: totals.opened, answered: totals.answered, closed: totals.closed, waitingNow: totals.waitingNow,
            longestWaitSeconds: totals.longestWaitSince.map { max(0, until.timeIntervalSince($0)) })
        firstResponse = Self.durations(totals.responseSeconds)
        timeToClose = Self.durations(totals.closeSeconds)
        ratings = Ratings(
            count: totals.ratings, average: totals.ratings > 0 ? Double(totals.ratingSum) / Double(totals.ratings) : nil,
            goodShare: totals.ratings > 0 ? Double(totals.goodRatings) / Double(totals.ratings) : nil)
        reminders = totals.reminders
        supportHours = hours != nil
        mostReadArticles = mostRead
    }

    /// Median and p90 of values sorted ascending (nearest rank).
    static func durations(_ sorted: [Double]) -> Durations {
        guard !sorted.isEmpty else { return Durations(count: 0) }
        func rank(_ share: Double) -> Double { sorted[min(sorted.count - 1, max(0, Int((share * Double(sorted.count)).rounded(.up)) - 1))] }
        return Durations(count: sorted.count, medianSeconds: rank(0.5), p90Seconds: rank(0.9))
    }

    static func iso(_ date: Date) -> String { Date.ISO8601FormatStyle().format(date) }
}

/// Reads support's numbers from the store.
struct SupportNumbers: Sendable {
    let store: any ConversationRecords
    let catalog: AppCatalog
    let time: ServerTime
    /// The help center, whose reads are counted in the store beside the conversations; nil (a
    /// desk without the server's features, in tests) leaves the most read articles out.
    var help: HelpCenter? = nil

    func stats(of app: AppSettings, days: Int) async throws -> SupportStats {
        let until = time.now()
        let since = until.addingTimeInterval(-Double(days) * 86_400)
        let totals = try await store.conversationTotals(app: app.id, since: since, until: until)
        let mostRead = try await help?.mostRead(app: app.id, since: since, limit: SupportStats.mostReadLimit) ?? []
        return SupportStats(app: app.id, days: days, totals: totals, hours: app.supportHours, since: since, until: until, mostRead: mostRead)
    }
}
