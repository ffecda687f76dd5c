import ThreadDeskCore

/// The apps a deployment serves, found by what names them: the key a request presents, the
/// forum (or the guild) a Discord event comes from, the app part of a user's id.
public struct AppCatalog: Sendable {
    /// In the order they were configured.
    public let apps: [AppSettings]
    private let byID: [AppID: AppSettings]
    private let byForum: [String: AppID]

    /// - Precondition: ids, keys and forums are unique (the apps file's reader refuses others).
    public init(_ apps: [AppSettings]) {
        precondition(!apps.isEmpty, "a deployment serves at least one app")
        self.apps = apps
        byID = Dictionary(apps.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        byForum = Dictionary(apps.map { ($0.forumChannelID, $0.id) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether there is more than one app (the desk then names the app of a user).
    public var isShared: Bool { apps.count > 1 }

    public subscript(id: AppID) -> AppSettings? { byID[id] }

    /// The app of a user, nil when it is no longer configured (its data is kept until `threaddesk
    /// admin app delete`; nothing is sent for it meanwhile).
    public func app(of user: UserID) -> AppSettings? { byID[user.app] }

    /// The app whose forum `channel` is.
    public func app(forForum channel: String) -> AppSettings? { byForum[channel].flatMap { byID[$0] } }

    /// The app whose key `presented` is. Every key is compared, in constant time each: how long
    /// the answer takes says nothing of which app's key a guess came close to.
    public func app(forKey presented: String) -> AppSettings? {
        var found: AppSettings?
        for app in apps where constantTimeEquals(presented, app.appKey) { found = app }
        return found
    }

    /// The app whose legacy key `presented` is (compared like `app(forKey:)`).
    public func app(forLegacyKey presented: String) -> AppSettings? {
        var found: AppSettings?
        for app in apps {
            if let key = app.legacyAPIKey, constantTimeEquals(presented, key) { found = app }
        }
        return found
    }

    /// Every app's forum.
    public var forums: Set<String> { Set(byForum.keys) }

    /// Every app's FAQ forum.
    public var faqForums: Set<String> { Set(apps.compactMap(\.faqChannelID)) }

    /// Every guild an app lives in.
    public var guilds: Set<String> { Set(apps.map(\.guildID)) }

    /// Whether any app has the legacy routes on.
    public var legacyRoutes: Bool { apps.contains { $0.legacyAPIKey != nil } }
}
