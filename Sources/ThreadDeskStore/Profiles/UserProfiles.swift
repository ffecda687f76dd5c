import Foundation
import ThreadDeskCore
import ThreadDeskWire

/// What the app says about one of its users: attributes it set (`PUT /v1/attributes`) and what
/// the user did lately (`POST /v1/activity`). Data shown to support, never instructions.
public struct UserProfile: Sendable, Hashable {
    public var attributes: [String: AttributeValue]
    /// When the attributes last changed; nil when the app never set any.
    public var attributesUpdatedAt: Date?
    /// The newest first.
    public var activity: [ActivityRecord]

    public init(attributes: [String: AttributeValue] = [:], attributesUpdatedAt: Date? = nil, activity: [ActivityRecord] = []) {
        self.attributes = attributes
        self.attributesUpdatedAt = attributesUpdatedAt
        self.activity = activity
    }

    public var isEmpty: Bool { attributes.isEmpty && activity.isEmpty }
}

/// One thing a user did in the app, as kept.
public struct ActivityRecord: Sendable, Hashable {
    /// The app's id of the event: an event sent again is kept once.
    public var id: String
    public var name: String
    public var properties: [String: AttributeValue]
    /// The device's time, or the server's when the device's was missing or far off.
    public var occurredAt: Date

    public init(id: String, name: String, properties: [String: AttributeValue], occurredAt: Date) {
        self.id = id
        self.name = name
        self.properties = properties
        self.occurredAt = occurredAt
    }
}

/// Users' attributes and recent activity. The attributes are written under the user's lock
/// (`withUser`: a merge reads and writes them); the activity is appended by a single statement
/// each, and only the newest `keep` stay. Erasing a user erases both; the export lists both.
public protocol UserProfiles: Sendable {
    /// The user's attributes and activity; an empty profile when the app told nothing.
    func profile(of user: UserID) async throws -> UserProfile
    /// Replaces the user's attributes (the caller merged them); an empty set removes the row.
    func setAttributes(_ attributes: [String: AttributeValue], of user: UserID, at date: Date) async throws
    /// Keeps an event, once per id, and drops all but the user's newest `keep`; only for a user
    /// the store has (an event that waited out the user's erasure keeps nothing).
    /// - Returns: false when an event with this id was kept already, or the user is gone (nothing changed).
    @discardableResult
    func recordActivity(_ event: ActivityRecord, of user: UserID, keep: Int) async throws -> Bool
}

/// How often an article of the help center was read, and how often its readers wrote to support
/// soon after.
public struct ArticleReadTotal: Sendable, Hashable {
    public var article: String
    /// Reads counted (once per user and UTC day).
    public var reads: Int
    /// Of them, reads after which the user did not write to support within the window.
    public var withoutMessage: Int

    public init(article: String, reads: Int, withoutMessage: Int) {
        self.article = article
        self.reads = reads
        self.withoutMessage = withoutMessage
    }
}

/// One read of an article by a user, as the export lists it.
public struct ArticleRead: Sendable, Hashable {
    public var article: String
    /// The first read of its UTC day.
    public var readAt: Date
    /// Whether the user wrote to support soon after.
    public var wroteAfter: Bool

    public init(article: String, readAt: Date, wroteAfter: Bool) {
        self.article = article
        self.readAt = readAt
        self.wroteAfter = wroteAfter
    }
}

/// Reads of the help center's articles (`POST /v1/articles/{id}/views`): counted once per user,
/// article and UTC day; a message the user writes soon after marks the reads before it as not
/// enough. Erased with the user.
public protocol ArticleReads: Sendable {
    /// Counts the user's read of `article` (a FAQ post's id) unless one was counted the same UTC
    /// day, or the store has no such user.
    /// - Returns: Whether it was counted now.
    func recordArticleRead(_ article: String, by user: UserID, at date: Date) async throws -> Bool
    /// The user wrote to support at `date`: their reads of the `window` before it led to a message.
    func userWroteAfterReads(_ user: UserID, at date: Date, window: TimeInterval) async throws
    /// The user's reads, oldest first, at most `limit` (the export).
    func articleReads(of user: UserID, limit: Int) async throws -> [ArticleRead]
    /// The articles of `app` read most since `since`, most reads first (ties by id), at most `limit`.
    func articleReadTotals(app: AppID, since: Date, limit: Int) async throws -> [ArticleReadTotal]
}
