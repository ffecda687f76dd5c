import DiscordREST
import Foundation
import Synchronization

/// The guild's people as Discord reasons about them: members with roles, roles with permissions,
/// channels with overwrites, and a member's permissions in a channel computed from all three the
/// way Discord documents it. Interactions carry that result; posting in a forum needs it.
extension DiscordWorld {
    /// A new member of the guild (a person, not a bot) holding `roles`; GUILD_MEMBER_ADD to the
    /// sessions that asked for GUILD_MEMBERS.
    func addMember(named name: String, roles: [Snowflake]) throws(DiscordFailure) -> Snowflake {
        try state.withLock { state throws(DiscordFailure) -> Snowflake in
            let known = Set(state.roles.map(\.id))
            guard roles.allSatisfy(known.contains) else { throw .unknownRole }
            let user = EmulatedUser(id: ids.next(), username: name, globalName: nil, isBot: false)
            state.users[user.id] = user
            state.memberRoles[user.id] = roles
            state.gateway.dispatch(
                "GUILD_MEMBER_ADD", merging(memberJSON(user.id, state: state, withUser: true), ["guild_id": .string(guildID.description)]),
                intent: .guildMembers, author: nil)
            return user.id
        }
    }

    /// A member's roles become `roles` (GUILD_MEMBER_UPDATE).
    func setRoles(of member: Snowflake, to roles: [Snowflake]) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard state.users[member] != nil else { throw .unknownMember }
            let known = Set(state.roles.map(\.id))
            guard roles.allSatisfy(known.contains) else { throw .unknownRole }
            state.memberRoles[member] = roles
            state.gateway.dispatch(
                "GUILD_MEMBER_UPDATE", merging(memberJSON(member, state: state, withUser: true), ["guild_id": .string(guildID.description)]),
                intent: .guildMembers, author: nil)
        }
    }

    /// A role's guild-wide permissions (GUILD_ROLE_UPDATE); the guild's id is `@everyone`.
    func setRolePermissions(_ role: Snowflake, _ permissions: UInt64) throws(DiscordFailure) {
        if role == guildID { return setEveryonePermissions(permissions) }
        try state.withLock { state throws(DiscordFailure) in
            guard let index = state.roles.firstIndex(where: { $0.id == role }) else { throw .unknownRole }
            state.roles[index].permissions = permissions
            state.gateway.dispatch(
                "GUILD_ROLE_UPDATE", ["guild_id": .string(guildID.description), "role": state.roles[index].json], intent: .guilds,
                author: nil)
        }
    }

    /// Sets (or, with both empty, removes) the overwrite of `target` on a guild channel, as
    /// `PUT /channels/{channel}/permissions/{target}` does: CHANNEL_UPDATE.
    func setOverwrite(on channelID: Snowflake, target: Snowflake, type: Int, allow: UInt64, deny: UInt64) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard var channel = state.channels[channelID] else { throw .unknownChannel }
            guard !channel.isThread else { throw .wrongChannelType }
            channel.permissionOverwrites.removeAll { $0.id == target }
            if allow != 0 || deny != 0 {
                channel.permissionOverwrites.append(PermissionOverwrite(id: target, type: type, allow: allow, deny: deny))
            }
            state.channels[channelID] = channel
            state.gateway.dispatch("CHANNEL_UPDATE", json(channel), intent: .guilds, author: nil)
        }
    }

    /// What `member` may do in `channelID` (a thread answers for its parent): the owner holds
    /// everything; otherwise `@everyone` and the member's roles, everything with Administrator,
    /// then the channel's `@everyone` overwrite, its role overwrites (denies, then allows) and the
    /// member's own; nothing at all without View Channel.
    func permissions(of member: Snowflake, in channelID: Snowflake, state: State) -> UInt64 {
        if member == agent.id { return Permissions.all }
        let roles = state.memberRoles[member] ?? []
        var held = state.everyonePermissions
        for role in state.roles where roles.contains(role.id) { held |= role.permissions }
        if held & Permissions.administrator != 0 { return Permissions.all }
        let channel = state.channels[channelID].flatMap { $0.isThread ? $0.parentID.flatMap { state.channels[$0] } : $0 }
        let overwrites = channel?.permissionOverwrites ?? []
        if let everyone = overwrites.first(where: { $0.type == 0 && $0.id == guildID }) {
            held = held & ~everyone.deny | everyone.allow
        }
        let mine = overwrites.filter { $0.type == 0 && roles.contains($0.id) }
        held = held & ~mine.reduce(0) { $0 | $1.deny } | mine.reduce(0) { $0 | $1.allow }
        if let own = overwrites.first(where: { $0.type == 1 && $0.id == member }) {
            held = held & ~own.deny | own.allow
        }
        return held & Permissions.viewChannel == 0 ? 0 : held
    }

    /// The guild member object, as Discord sends it: on MESSAGE_CREATE/UPDATE without `user` (the
    /// author is beside it), on interactions and REST with it.
    func memberJSON(_ member: Snowflake, state: State, withUser: Bool) -> JSON {
        var object: [String: JSON] = [
            "roles": .array((state.memberRoles[member] ?? []).map { .string($0.description) }),
            "nick": nil, "avatar": nil, "banner": nil, "joined_at": .string(ISO8601.string(guildID.date)), "premium_since": nil,
            "deaf": false, "mute": false, "flags": 0, "pending": false, "communication_disabled_until": nil,
        ]
        if withUser, let user = state.users[member] { object["user"] = user.json }
        return .object(object)
    }

    /// A message as the gateway dispatches it: in a guild, a member's message carries their
    /// `member` object (a webhook's has none: no member wrote it).
    func gatewayJSON(_ message: EmulatedMessage, in state: State, withNonce: Bool = false) -> JSON {
        let body = json(message, in: state, withNonce: withNonce)
        guard message.origin.webhookName == nil, state.users[message.authorID] != nil else { return body }
        return merging(body, ["member": memberJSON(message.authorID, state: state, withUser: false)])
    }
}
