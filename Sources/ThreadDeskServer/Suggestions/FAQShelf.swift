import ThreadDeskCore

/// Each app's curated answers: the book of its FAQ forum, so one app's answers are never
/// suggested, named or served to another's users. Today the FAQ forum (`DISCORD_FAQ_CHANNEL_ID`)
/// is the first app's; the other apps have none.
struct FAQShelf: Sendable {
    private let books: [AppID: FAQBook]

    init(_ books: [AppID: FAQBook] = [:]) { self.books = books }

    /// The book of `app`'s FAQ forum; nil when it has none.
    func book(for app: AppID) -> FAQBook? { books[app] }
}
