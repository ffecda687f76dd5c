import Foundation
import NIOHTTP1

/// The guild as the bot sees it: its roles and the bot's membership (what `threaddesk doctor` reads).
extension DiscordClient {
    public func guild(_ id: String) async throws(DiscordError) -> DiscordGuild {
        try await send(
            Request(method: .GET, template: "/guilds/{guild_id}", path: "/guilds/\(try Self.id(id))", major: id, retriesServerErrors: true),
            as: DiscordGuild.self)
    }

    /// Makes a forum channel (type 15) in the guild, as an admin sets one up for an app (Manage
    /// Channels); `tags` become its available tags.
    public func createForum(guildID: String, name: String, tags: [String] = []) async throws(DiscordError) -> DiscordChannel {
        try await send(
            Request(
                method: .POST, template: "/guilds/{guild_id}/channels", path: "/guilds/\(try Self.id(guildID))/channels", major: guildID,
                body: try Self.body(DiscordForumCreate(name: name, availableTags: tags.map { .init(name: $0) }), files: []),
                retriesServerErrors: false),
            as: DiscordChannel.self)
    }

    public func guildMember(guildID: String, userID: String) async throws(DiscordError) -> DiscordGuildMember {
        try await send(
            Request(
                method: .GET, template: "/guilds/{guild_id}/members/{user_id}",
                path: "/guilds/\(try Self.id(guildID))/members/\(try Self.id(userID))", major: guildID, retriesServerErrors: true),
            as: DiscordGuildMember.self)
    }
}

/// The body of `POST /guilds/{guild.id}/channels` for a forum.
struct DiscordForumCreate: Sendable, Encodable {
    struct Tag: Sendable, Encodable { var name: String }
    var name: String
    var type = 15
    var availableTags: [Tag]

    private enum CodingKeys: String, CodingKey { case name, type, availableTags = "available_tags" }
}

public struct DiscordGuild: Sendable, Codable, Hashable {
    public var id: String
    public var name: String
    public var ownerId: String?
    public var roles: [DiscordRole]

    /// Each role's guild-wide permissions by its id (the guild's id is `@everyone`).
    public var rolePermissions: [String: DiscordPermissions] {
        Dictionary(roles.map { ($0.id, DiscordPermissions(string: $0.permissions) ?? []) }, uniquingKeysWith: { first, _ in first })
    }
}

public struct DiscordRole: Sendable, Codable, Hashable {
    public var id: String
    public var name: String
    /// A permission bitfield as a decimal string.
    public var permissions: String
    public var tags: Tags?

    public struct Tags: Sendable, Codable, Hashable {
        /// Set on the role Discord made for a bot when it was invited.
        public var botId: String?
    }
}

public struct DiscordGuildMember: Sendable, Codable, Hashable {
    public var user: DiscordUser?
    public var roles: [String]
}

public struct DiscordPermissionOverwrite: Sendable, Codable, Hashable {
    public var id: String
    /// 0: a role (the guild's id is `@everyone`); 1: a member.
    public var type: Int
    public var allow: String
    public var deny: String

    public var overwrite: DiscordPermissions.Overwrite {
        .init(id: id, type: type, allow: DiscordPermissions(string: allow) ?? [], deny: DiscordPermissions(string: deny) ?? [])
    }
}
