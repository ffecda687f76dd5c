import Foundation

/// What the app said about its user that the server does not have yet: attribute changes (the
/// latest value of each key; nil removes it) and activity (each event under the id it keeps on
/// every attempt), oldest first.
public struct UserContextBacklog: Sendable, Codable, Hashable {
    /// Attribute changes not sent yet: a later set of a key replaces an earlier one.
    public internal(set) var attributes: [String: AttributeValue?]
    /// Events not sent yet, oldest first: at most `ActivityEvent.keptPerUser`, the newest.
    public internal(set) var activity: [ActivityEvent]
    /// The keys the server held at its last answer: with the pending ones, what the 50-key rule
    /// is checked against on the device.
    var serverKeys: Set<String>

    public init() {
        attributes = [:]
        activity = []
        serverKeys = []
    }

    public var isEmpty: Bool { attributes.isEmpty && activity.isEmpty }

    /// The keys the user would hold once the pending changes are in.
    var keysAfterPending: Set<String> {
        var keys = serverKeys
        for (key, value) in attributes {
            if value == nil { keys.remove(key) } else { keys.insert(key) }
        }
        return keys
    }

    private enum CodingKeys: String, CodingKey { case attributes, activity, serverKeys }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Null values stay removals: read as the wire's update body reads them.
        attributes = try container.decode(AttributesUpdate.self, forKey: .attributes).attributes
        activity = try container.decode([ActivityEvent].self, forKey: .activity)
        serverKeys = try container.decodeIfPresent(Set<String>.self, forKey: .serverKeys) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(AttributesUpdate(attributes: attributes), forKey: .attributes)
        try container.encode(activity, forKey: .activity)
        try container.encode(serverKeys.sorted(), forKey: .serverKeys)
    }
}

/// Where the backlog waits between launches. Its calls are synchronous so that a change and its
/// write happen in one step on the client: no later write can be overtaken by an earlier one.
public protocol UserContextStore: Sendable {
    func load() throws -> UserContextBacklog?
    /// Replaces the kept backlog; nil forgets it (sign-out, erasure).
    func save(_ backlog: UserContextBacklog?) throws
}

/// Keeps the backlog in memory only: for tests, or apps that accept losing what was not sent
/// when they are killed.
public final class InMemoryUserContextStore: UserContextStore {
    private let kept = Locked<UserContextBacklog?>(nil)

    public init() {}

    public func load() -> UserContextBacklog? { kept.current }
    public func save(_ backlog: UserContextBacklog?) { kept.withLock { $0 = backlog } }
}

/// Keeps the backlog in a JSON file only its owner may read, replaced atomically, so an
/// attribute set offline reaches support even if the app is killed before the network is back.
public struct FileUserContextStore: UserContextStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    public func load() throws -> UserContextBacklog? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        // A file of a newer version, or damaged: started over, not fatal.
        return try? JSONDecoder().decode(UserContextBacklog.self, from: Data(contentsOf: url))
    }

    public func save(_ backlog: UserContextBacklog?) throws {
        guard let backlog, !backlog.isEmpty || !backlog.serverKeys.isEmpty else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        try PrivateFile.write(try JSONEncoder().encode(backlog), to: url)
    }
}

/// Something the server refused for good (400): dropped from the backlog, never sent again.
public struct UserContextRefusal: Sendable, Hashable {
    public enum Item: Sendable, Hashable {
        /// These attribute changes (the key the server named, or the whole update when it named none).
        case attributes([String])
        case activity(ActivityEvent)
    }

    public let item: Item
    public let error: ThreadDeskError
}

/// What one ``ThreadDeskClient/sendUserContext()`` did.
public struct UserContextReport: Sendable, Hashable {
    /// The attributes the server keeps now, when an update went out.
    public internal(set) var attributes: UserAttributes?
    /// The events the server took (or had already, under the same id).
    public internal(set) var recorded: [RecordedActivity] = []
    /// What the server refused for good: dropped, and told to ``ThreadDeskConfiguration/userContextRefused``.
    public internal(set) var refused: [UserContextRefusal] = []
    /// Why the rest still waits (no session, no network, the server asked to come back later);
    /// nil when nothing waits.
    public internal(set) var failure: ThreadDeskError?
}
