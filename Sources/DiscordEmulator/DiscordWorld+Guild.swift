import DiscordREST
import Foundation
import Synchronization

/// The guild as REST shows it — its roles, a member and their roles — and the switches a
/// guild's owner turns in Discord: a permission taken from the bot in the forum, the Message
/// Content intent in the Developer Portal.
extension DiscordWorld {
    /// `GET /guilds/{guild}`: the guild without the gateway's extras (members, channels, threads).
    func guild(_ id: Snowflake) throws(DiscordFailure) -> JSON {
        guard isGuild(id) else { throw .unknownGuild }
        return state.withLock { state in
            guard case .object(var object) = guildCreate(id, state: state) else { return .null }
            for key in ["joined_at", "large", "unavailable", "member_count", "members", "channels", "threads", "voice_states",
                "presences", "stage_instances", "guild_scheduled_events", "soundboard_sounds"]
            {
                object[key] = nil
            }
            object["region"] = "deprecated"
            object["home_header"] = .null
            object["widget_enabled"] = false
            object["widget_channel_id"] = .null
            object["max_presences"] = .null
            object["max_stage_video_channel_users"] = 50
            object["incidents_data"] = .null
            return .object(object)
        }
    }

    /// `GET /guilds/{guild}/roles`.
    func guildRoles(_ id: Snowflake) throws(DiscordFailure) -> JSON {
        guard isGuild(id) else { throw .unknownGuild }
        return state.withLock { rolesJSON(state: $0) }
    }

    /// `GET /guilds/{guild}/members/{user}`.
    func guildMember(_ id: Snowflake, user userID: Snowflake) throws(DiscordFailure) -> JSON {
        guard isGuild(id) else { throw .unknownGuild }
        return try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let user = state.users[userID] else { throw .unknownMember }
            return [
                "user": user.json, "nick": nil, "avatar": nil, "banner": nil,
                "roles": .array((state.memberRoles[userID] ?? []).map { .string($0.description) }),
                "joined_at": .string(ISO8601.string(guildID.date)), "premium_since": nil, "deaf": false, "mute": false,
                "flags": 0, "pending": false, "communication_disabled_until": nil,
            ]
        }
    }

    /// A member overwrite on the forum that denies the bot `permissions` (added to what it already
    /// denies), announced as CHANNEL_UPDATE.
    func denyBotInForum(_ permissions: UInt64) {
        state.withLock { state in
            guard var forum = state.channels[forumID] else { return }
            if let index = forum.permissionOverwrites.firstIndex(where: { $0.type == 1 && $0.id == bot.id }) {
                forum.permissionOverwrites[index].deny |= permissions
                forum.permissionOverwrites[index].allow &= ~permissions
            } else {
                forum.permissionOverwrites.append(PermissionOverwrite(id: bot.id, type: 1, allow: 0, deny: permissions))
            }
            state.channels[forumID] = forum
            state.gateway.dispatch("CHANNEL_UPDATE", json(forum), intent: .guilds, author: nil)
        }
    }

    /// Sets the `@everyone` role's permissions (the guild's base for every member).
    func setEveryonePermissions(_ permissions: UInt64) {
        state.withLock { state in
            state.everyonePermissions = permissions
            state.gateway.dispatch(
                "GUILD_ROLE_UPDATE", ["guild_id": .string(guildID.description), "role": rolesJSON(state: state)[0] ?? .null],
                intent: .guilds, author: nil)
        }
    }

    /// The Message Content intent's switch: off, an identify asking for it is closed with 4014 and
    /// the application's flags lose GATEWAY_MESSAGE_CONTENT_LIMITED.
    func setMessageContentIntent(_ enabled: Bool) {
        state.withLock { $0.messageContentIntentEnabled = enabled }
    }
}
