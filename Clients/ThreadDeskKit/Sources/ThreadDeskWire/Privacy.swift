/// `GET /v1/me/export`: one page of the user's conversation and everything ThreadDesk keeps about
/// them (the right of access). Pages hold at most `limit` messages (up to 1,000); while `hasMore`,
/// the next page is asked for with `after` = the last message's id.
public struct DataExport: Sendable, Codable, Hashable {
    /// What ThreadDesk keeps about the user, besides the conversation.
    public var user: KeptUserData
    /// The messages the user can see, of every thread they have had, oldest first, as
    /// `GET /v1/messages` shows them (support's internal notes are not the user's data and are not
    /// shown); attachments as ThreadDesk's own URLs.
    public var messages: [SupportMessage]
    public var hasMore: Bool
    /// ISO 8601.
    public var exportedAt: String
    /// The crash and hang reports the app sent for the user, oldest first (on the first page;
    /// nil on the others, and from servers before crash reports).
    public var crashReports: [ExportedCrashReport]?

    public init(user: KeptUserData, messages: [SupportMessage], hasMore: Bool, exportedAt: String, crashReports: [ExportedCrashReport]? = nil) {
        self.user = user
        self.messages = messages
        self.hasMore = hasMore
        self.exportedAt = exportedAt
        self.crashReports = crashReports
    }
}

/// A crash or hang report as an export shows it: what the app's MetricKit said (the crashed
/// thread's frames as binary and offset: the developer's symbols are not the user's data).
public struct ExportedCrashReport: Sendable, Codable, Hashable {
    public var id: String
    /// "crash" or "hang".
    public var kind: String
    /// The crash group, e.g. "C12".
    public var group: String
    public var appVersion: String
    public var appBuild: String
    /// ISO 8601.
    public var createdAt: String
    public var osVersion: String?
    public var deviceType: String?
    /// The exception and signal, or the hang's duration.
    public var cause: String
    /// The crashed thread's frames, top first, as `binary+0xoffset`.
    public var frames: [String]

    public init(
        id: String, kind: String, group: String, appVersion: String, appBuild: String, createdAt: String, osVersion: String?,
        deviceType: String?, cause: String, frames: [String]
    ) {
        (self.id, self.kind, self.group, self.appVersion, self.appBuild, self.createdAt) = (id, kind, group, appVersion, appBuild, createdAt)
        (self.osVersion, self.deviceType, self.cause, self.frames) = (osVersion, deviceType, cause, frames)
    }
}

/// What ThreadDesk keeps about a user besides their messages. Secrets are described, never
/// shown: the push token and the session tokens only by whether they exist.
public struct KeptUserData: Sendable, Codable, Hashable {
    public var userId: String
    /// ISO 8601: when the id was first seen.
    public var createdAt: String
    /// ISO 8601: the last change of the user's record (their last action, or a delivery to them).
    public var updatedAt: String
    /// The app and device info last told to support (or waiting for the first message).
    public var installation: [String: String]?
    public var pushTokenRegistered: Bool
    /// `production` or `development`, when a push token is registered.
    public var pushEnvironment: String?
    /// Support replies the user has not read.
    public var unreadCount: Int
    /// The newest message the user has read.
    public var lastReadMessageId: String?
    /// Sessions (devices) whose token works.
    public var liveSessions: Int
    /// The Discord thread of the user's conversation (messages of earlier threads of theirs are in the export too).
    public var threadId: String?
    /// What the app said about the user (`PUT /v1/attributes`); nil from servers before attributes.
    public var attributes: [String: AttributeValue]? = nil
    /// What the user did lately as the app told it (`POST /v1/activity`), the newest first; nil
    /// from servers before activity.
    public var activity: [ActivityEvent]? = nil
    /// The help center's articles the user read (once per article and UTC day), oldest first;
    /// nil from servers before the help center.
    public var articleReads: [ExportedArticleRead]? = nil

    public init(
        userId: String, createdAt: String, updatedAt: String, installation: [String: String]?, pushTokenRegistered: Bool,
        pushEnvironment: String?, unreadCount: Int, lastReadMessageId: String?, liveSessions: Int, threadId: String?
    ) {
        self.userId = userId
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.installation = installation
        self.pushTokenRegistered = pushTokenRegistered
        self.pushEnvironment = pushEnvironment
        self.unreadCount = unreadCount
        self.lastReadMessageId = lastReadMessageId
        self.liveSessions = liveSessions
        self.threadId = threadId
    }
}

/// A read of a help-center article, as an export lists it.
public struct ExportedArticleRead: Sendable, Codable, Hashable {
    /// The article's id (a FAQ post's).
    public var articleId: String
    /// ISO 8601: the first read of its UTC day.
    public var readAt: String
    /// Whether the user wrote to support within 10 minutes after.
    public var wroteAfter: Bool

    public init(articleId: String, readAt: String, wroteAfter: Bool) {
        self.articleId = articleId
        self.readAt = readAt
        self.wroteAfter = wroteAfter
    }
}
