/// Discord's permission bits that ThreadDesk needs, and the documented way a member's permissions
/// in a channel are computed from the guild's roles and the channel's overwrites.
public struct DiscordPermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let addReactions = Self(rawValue: 1 << 6)
    public static let administrator = Self(rawValue: 1 << 3)
    public static let manageChannels = Self(rawValue: 1 << 4)
    public static let viewChannel = Self(rawValue: 1 << 10)
    public static let sendMessages = Self(rawValue: 1 << 11)
    public static let attachFiles = Self(rawValue: 1 << 15)
    public static let readMessageHistory = Self(rawValue: 1 << 16)
    public static let manageWebhooks = Self(rawValue: 1 << 29)
    public static let manageThreads = Self(rawValue: 1 << 34)
    public static let sendMessagesInThreads = Self(rawValue: 1 << 38)
    /// Every permission Discord defines today (bits 0–50).
    public static let all = Self(rawValue: (1 << 51) - 1)

    /// The names the Discord client shows, for the bits above.
    public static let names: [(Self, String)] = [
        (.viewChannel, "View Channel"), (.sendMessages, "Send Messages"), (.sendMessagesInThreads, "Send Messages in Threads"),
        (.attachFiles, "Attach Files"), (.readMessageHistory, "Read Message History"), (.addReactions, "Add Reactions"),
        (.manageThreads, "Manage Threads"), (.manageWebhooks, "Manage Webhooks"), (.manageChannels, "Manage Channels"),
        (.administrator, "Administrator"),
    ]

    /// The named permissions in this set, in the order of `names`.
    public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

    /// A bitfield as Discord sends it (a decimal string); nil when unreadable.
    public init?(string: String) {
        guard let bits = UInt64(string) else { return nil }
        self.init(rawValue: bits)
    }

    /// One permission overwrite of a channel: `type` 0 is a role (the guild's id is `@everyone`),
    /// 1 a member.
    public struct Overwrite: Sendable, Hashable {
        public var id: String
        public var type: Int
        public var allow: DiscordPermissions
        public var deny: DiscordPermissions

        public init(id: String, type: Int, allow: DiscordPermissions, deny: DiscordPermissions) {
            self.id = id
            self.type = type
            self.allow = allow
            self.deny = deny
        }
    }

    /// A member's permissions in a channel, as Discord documents it ("Permission Overwrites"): the
    /// base is `@everyone`'s and the member's roles' together (everything for the owner or an
    /// administrator, whom overwrites do not touch); then the channel's `@everyone` overwrite, the
    /// member's roles' overwrites (all denies, then all allows), the member's own. Without View
    /// Channel a member can do nothing in the channel.
    public static func effective(
        guildID: String, ownerID: String?, memberID: String, memberRoles: [String], rolePermissions: [String: DiscordPermissions],
        overwrites: [Overwrite]
    ) -> DiscordPermissions {
        if memberID == ownerID { return .all }
        var permissions = rolePermissions[guildID] ?? []
        for role in memberRoles { permissions.formUnion(rolePermissions[role] ?? []) }
        if permissions.contains(.administrator) { return .all }
        if let everyone = overwrites.first(where: { $0.type == 0 && $0.id == guildID }) {
            permissions.subtract(everyone.deny)
            permissions.formUnion(everyone.allow)
        }
        var allow: DiscordPermissions = []
        var deny: DiscordPermissions = []
        for overwrite in overwrites where overwrite.type == 0 && memberRoles.contains(overwrite.id) {
            allow.formUnion(overwrite.allow)
            deny.formUnion(overwrite.deny)
        }
        permissions.subtract(deny)
        permissions.formUnion(allow)
        if let own = overwrites.first(where: { $0.type == 1 && $0.id == memberID }) {
            permissions.subtract(own.deny)
            permissions.formUnion(own.allow)
        }
        return permissions.contains(.viewChannel) ? permissions : []
    }
}
