import ThreadDeskCore

/// Each app's curated answers: the book of its FAQ forum (`DISCORD_FAQ_CHANNEL_ID`, or the app's
/// `faqChannelID` in `APPS_FILE`), so one app's answers are never suggested, named or served to
/// another's users.
struct FAQShelf: Sendable {
    private let books: [AppID: FAQBook]

    init(_ books: [AppID: FAQBook] = [:]) { self.books = books }

    /// The book of `app`'s FAQ forum; nil when it has none.
    func book(for app: AppID) -> FAQBook? { books[app] }

    /// `app`'s answer suggested first for `query` and how much of the query it covers (0 to 1);
    /// nil when nothing matches or the app has no FAQ forum.
    func bestMatch(for query: String, app: AppID) async -> (answer: CuratedAnswer, coverage: Double)? {
        await books[app]?.bestMatch(for: query)
    }
}
