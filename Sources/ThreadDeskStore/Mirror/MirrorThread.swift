import DiscordREST
import Foundation
import ThreadDeskCore

/// What ThreadDesk knows about one thread's mirror as a whole.
public struct MirrorThread: Sendable, Hashable, Codable {
    public var id: Snowflake
    public var owner: UserID
    /// The whole history is in the mirror (backfilled, or mirrored since the thread began).
    public var complete: Bool
    /// The newest message id the mirror holds.
    public var newestSeen: Snowflake?
    /// The gateway feed's epoch in which REST last confirmed this thread (see `FeedState`).
    public var syncedEpoch: Int
    /// When REST last confirmed it.
    public var syncedAt: Date?
    /// The last time a message of it was created, edited or deleted: what reconciliation looks at.
    public var lastActivity: Date
    /// Deleted in Discord: nothing more to read from it.
    public var gone: Bool

    public init(
        id: Snowflake, owner: UserID, complete: Bool, newestSeen: Snowflake? = nil, syncedEpoch: Int = 0, syncedAt: Date? = nil,
        lastActivity: Date = Date(), gone: Bool = false
    ) {
        self.id = id
        self.owner = owner
        self.complete = complete
        self.newestSeen = newestSeen
        self.syncedEpoch = syncedEpoch
        self.syncedAt = syncedAt
        self.lastActivity = lastActivity
        self.gone = gone
    }
}

/// A page of the mirror, in the order asked for.
public struct MirrorPage: Sendable, Hashable {
    public var messages: [MirroredMessage]
    public var hasMore: Bool

    public init(messages: [MirroredMessage], hasMore: Bool) {
        self.messages = messages
        self.hasMore = hasMore
    }
}

/// Which way a page reads: up from `after` (oldest first), or down from `before` or the newest.
public enum MirrorCursor: Sendable, Hashable {
    case after(Snowflake, before: Snowflake?)
    case before(Snowflake?)
}

/// A push whose time has come.
public struct DuePush: Sendable, Hashable {
    public var owner: UserID
    public var threadID: Snowflake
    public var messageID: Snowflake

    public init(owner: UserID, threadID: Snowflake, messageID: Snowflake) {
        self.owner = owner
        self.threadID = threadID
        self.messageID = messageID
    }
}

/// The conversation mirror's storage. Writes happen inside `withUser` of the thread's owner, so
/// one thread's facts are merged one at a time; reads need no lock.
public protocol MirrorStore: Sendable {
    func mirrorThread(_ id: Snowflake) async throws -> MirrorThread?
    func saveMirrorThread(_ thread: MirrorThread) async throws
    /// The stored versions of these messages (those known).
    func mirroredMessages(_ ids: [Snowflake]) async throws -> [MirroredMessage]
    /// Inserts or replaces whole messages.
    func saveMirroredMessages(_ messages: [MirroredMessage]) async throws
    /// Visible, undeleted messages of a thread.
    func mirrorPage(thread: Snowflake, _ cursor: MirrorCursor, limit: Int) async throws -> MirrorPage
    /// Visible, undeleted messages of every thread of `owner`'s (an export), oldest first, after
    /// `after` (from the start when nil).
    func conversation(of owner: UserID, after: Snowflake?, limit: Int) async throws -> MirrorPage
    /// Ids of the undeleted messages of a thread from `lowest` on (reconciliation looks for deletions).
    func mirroredIDs(thread: Snowflake, from lowest: Snowflake) async throws -> [Snowflake]
    /// The messages of one send split into several posts, first part first.
    func mirroredParts(of first: Snowflake) async throws -> [MirroredMessage]
    /// The undeleted message of `thread` that carries attachment `id`, if any.
    func mirroredMessage(withAttachment id: Snowflake, thread: Snowflake) async throws -> MirroredMessage?
    /// Visible, undeleted messages the user did not write (support's, the assistant's) newer
    /// than `after`: the unread count.
    func supportMessageCount(thread: Snowflake, after: Snowflake?) async throws -> Int
    /// Threads with activity since `date`, not gone.
    func activeMirrorThreads(since date: Date) async throws -> [MirrorThread]
    /// `count` fresh numbers of the store-wide live-event sequence, in increasing order.
    func nextEventSequences(_ count: Int) async throws -> [Int64]
    /// The messages of `owner`'s threads whose last change the user could see is numbered after
    /// `sequence`, in the order of those numbers (what a live stream missed).
    func mirrorEvents(owner: UserID, after sequence: Int64, limit: Int) async throws -> [MirroredMessage]
    /// The highest change number among `owner`'s messages (0 when none).
    func latestEventSequence(owner: UserID) async throws -> Int64
    /// Notes that Discord's message `discordID` is `owner`'s accepted message `messageID` (its
    /// first post): facts about it enter the mirror under `messageID`.
    func saveMirrorAlias(discordID: Snowflake, messageID: Snowflake, owner: UserID) async throws
    /// ThreadDesk's ids of these Discord messages, for those that have one.
    func mirrorAliases(_ discordIDs: [Snowflake]) async throws -> [Snowflake: Snowflake]
    /// Discord's ids of these accepted messages, for those delivered.
    func discordIDs(of messageIDs: [Snowflake]) async throws -> [Snowflake: Snowflake]
    /// Moves every message of thread `from` (the placeholder of a user whose thread did not exist
    /// yet) into thread `to`, and forgets `from`.
    func moveMirroredMessages(from: Snowflake, to: Snowflake) async throws
}

/// The pushes waiting to be sent (a user's `pendingPosts`, written inside `withUser`).
public protocol PushQueue: Sendable {
    /// Pending pushes due at `now`, oldest first.
    func duePushes(at now: Date, limit: Int) async throws -> [DuePush]
    /// When the next pending push is due, if any.
    func nextPushDue() async throws -> Date?
}
