import Foundation

/// What a device keeps of its conversation between launches: the chat opens with it offline,
/// and syncs from where it stood when the network is back.
public struct ConversationSnapshot: Sendable, Codable, Hashable {
    /// The user it belongs to: another user's (after a sign-out) is not shown.
    public var userID: String
    /// The newest of the server's messages (at most the store's cap), oldest first. Messages
    /// still on the device are the client's outbox's, not the snapshot's.
    public var messages: [ConversationMessage]
    /// The stream position to resume after.
    public var lastEventID: String?
    public var unreadCount: Int
    public var lastReadMessageID: String?
    /// Older messages exist on the server than the first kept here.
    public var hasEarlier: Bool

    public init(
        userID: String, messages: [ConversationMessage], lastEventID: String?, unreadCount: Int, lastReadMessageID: String?,
        hasEarlier: Bool
    ) {
        self.userID = userID
        self.messages = messages
        self.lastEventID = lastEventID
        self.unreadCount = unreadCount
        self.lastReadMessageID = lastReadMessageID
        self.hasEarlier = hasEarlier
    }
}

/// Where the conversation is kept on the device.
public protocol ConversationStore: Sendable {
    /// The most messages a snapshot keeps (the newest); older ones are fetched again when the
    /// user scrolls up.
    var messageCap: Int { get }
    func load() async throws -> ConversationSnapshot?
    /// Replaces the kept snapshot; nil forgets it (sign-out).
    func save(_ snapshot: ConversationSnapshot?) async throws
}

/// Keeps the conversation in memory only: for tests and previews.
public actor InMemoryConversationStore: ConversationStore {
    public nonisolated let messageCap: Int
    private var snapshot: ConversationSnapshot?

    public init(_ snapshot: ConversationSnapshot? = nil, messageCap: Int = 1000) {
        self.snapshot = snapshot
        self.messageCap = max(1, messageCap)
    }

    public func load() -> ConversationSnapshot? { snapshot }
    public func save(_ snapshot: ConversationSnapshot?) { self.snapshot = snapshot }
}

/// Keeps the conversation in a JSON file only its owner may read, replaced atomically: by
/// default the newest 1,000 messages (about 0.5 MB of text at the API's usual lengths).
public struct FileConversationStore: ConversationStore {
    public let url: URL
    public let messageCap: Int

    public init(url: URL, messageCap: Int = 1000) {
        self.url = url
        self.messageCap = max(1, messageCap)
    }

    /// The app's conversation file in the Kit's folder (Application Support on Apple platforms).
    public static func standard() -> FileConversationStore {
        FileConversationStore(url: ThreadDeskConfiguration.defaultFolder().appendingPathComponent("conversation.json"))
    }

    public func load() async throws -> ConversationSnapshot? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        // A file of a newer version, or damaged: started over from the server, not fatal.
        return try? JSONDecoder().decode(ConversationSnapshot.self, from: Data(contentsOf: url))
    }

    public func save(_ snapshot: ConversationSnapshot?) async throws {
        guard var snapshot else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        if snapshot.messages.count > messageCap {
            snapshot.messages.removeFirst(snapshot.messages.count - messageCap)
            snapshot.hasEarlier = true
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try PrivateFile.write(try JSONEncoder().encode(snapshot), to: url)
    }
}
