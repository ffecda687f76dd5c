import Foundation
import NIOHTTP1

/// The guild as the bot sees it: its roles and the bot's membership (what `threaddesk doctor` reads).
extension DiscordClient {
    public func guild(_ id: String) async throws(DiscordError) -> DiscordGuild {
        try await send(
            Request(method: .GET, template: "/guilds/{guild_id}", path: "/guilds/\(try Self.id(id))", major: id, retriesServerErrors: true),
            as: DiscordGuild.self)
    }

    public func guildMember(guildID: String, userID: String) async throws(DiscordError) -> DiscordGuildMember {
        try await send(
            Request(
                method: .GET, template: "/guilds/{guild_id}/members/{user_id}",
                path: "/guilds/\(try Self.id(guildID))/members/\(try Self.id(userID))", major: guildID, retriesServerErrors: true),
            as: DiscordGuildMember.self)
    }
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
