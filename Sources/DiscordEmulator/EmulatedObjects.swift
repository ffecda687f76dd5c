import DiscordREST
import Foundation
import Synchronization

/// A Discord user as the emulator stores it: the bot, support agents, anyone else in the guild.
struct EmulatedUser: Sendable {
    var id: Snowflake
    var username: String
    var globalName: String?
    var isBot: Bool

    var json: JSON {
        var object: [String: JSON] = [
            "id": .string(id.description),
            "username": .string(username),
            "discriminator": "0",
            "global_name": JSON(globalName),
            "avatar": nil,
            "public_flags": 0,
            "flags": 0,
            "primary_guild": nil,
            "avatar_decoration_data": nil,
            "collectibles": nil,
            "banner": nil,
            "accent_color": nil,
        ]
        if isBot { object["bot"] = true }
        return .object(object)
    }

    /// The user as `GET /users/@me` shows it to the user itself: with the account's private fields.
    var selfJSON: JSON {
        guard case .object(var object) = json else { return json }
        object["mfa_enabled"] = true
        object["locale"] = "en-US"
        object["verified"] = true
        object["email"] = .null
        return .object(object)
    }
}

struct EmulatedAttachment: Sendable {
    var id: Snowflake
    var filename: String
    var contentType: String?
    var description: String?
    var data: Data

    /// As Discord shows it, with `url` (and `proxy_url`) signed by the CDN.
    func json(url: String) -> JSON {
        var object: [String: JSON] = [
            "id": .string(id.description),
            "filename": .string(filename),
            "size": JSON(data.count),
            "url": .string(url),
            "proxy_url": .string(url),
        ]
        if let contentType { object["content_type"] = .string(contentType) }
        if let description { object["description"] = .string(description) }
        if let size = imageSize {
            object["width"] = JSON(size.width)
            object["height"] = JSON(size.height)
        }
        return .object(object)
    }
}

/// Discord message types the emulator produces.
public enum MessageType: Int, Sendable {
    case `default` = 0
    case channelNameChange = 4
    case threadCreated = 18
    case reply = 19
    case chatInputCommand = 20
    case threadStarterMessage = 21
}

struct EmulatedMessage: Sendable {
    var id: Snowflake
    var channelID: Snowflake
    var authorID: Snowflake
    var content: String
    var type: Int
    var attachments: [EmulatedAttachment]
    var nonce: JSON?
    var editedAt: Date?
    var mentionEveryone: Bool
    var mentionIDs: [Snowflake]
    /// Roles the message pinged (`mention_roles`).
    var mentionRoleIDs: [Snowflake] = []
    var reference: Snowflake?
    var reactions: [String]
    /// Message flags (64 ephemeral, 128 loading: a deferred interaction's answer not yet given).
    var flags = 0
    var origin = MessageOrigin()
    /// Action rows of buttons, each component with its `id`, as the message shows them.
    var components: [JSON] = []
    var createdAt: Date { id.date }
}

/// Where a message came from beside its author: a webhook, or an app answering an interaction.
struct MessageOrigin: Sendable {
    var webhookID: Snowflake?
    /// The name a webhook posted under (its author is then the webhook, not a user); nil for an
    /// app's interaction answers, which the bot user authors.
    var webhookName: String?
    var applicationID: Snowflake?
    var interactionMetadata: JSON?

    /// The author Discord shows for a webhook's message: the webhook under the name it used.
    var webhookAuthor: JSON? {
        guard let webhookID, let webhookName else { return nil }
        return [
            "id": .string(webhookID.description), "username": .string(webhookName), "discriminator": "0000",
            "global_name": nil, "avatar": nil, "bot": true, "public_flags": 0, "flags": 0, "primary_guild": nil,
        ]
    }
}

struct ThreadMetadata: Sendable {
    var archived = false
    var locked = false
    var autoArchiveDuration = 4320
    var archivedAt: Date?
    var createdAt: Date
}

enum ChannelType: Int, Sendable {
    case guildText = 0
    case publicThread = 11
    case guildForum = 15
}

struct EmulatedChannel: Sendable {
    var id: Snowflake
    var type: ChannelType
    var name: String
    /// The guild it is in; nil: the emulator's first guild.
    var guildID: Snowflake?
    var parentID: Snowflake?
    var ownerID: Snowflake?
    var lastMessageID: Snowflake?
    var messageCount = 0
    var totalMessageSent = 0
    var thread: ThreadMetadata?
    var appliedTags: [Snowflake] = []
    /// Forums only: tags that may be applied, and whether posts must carry one.
    var availableTags: [(id: Snowflake, name: String)] = []
    var requiresTag = false
    /// Guild channels only: `@everyone`'s, roles' and members' overwrites.
    var permissionOverwrites: [PermissionOverwrite] = []
    /// When each user last started typing here (TYPING_START lasts about 10 s).
    var typing: [Snowflake: Date] = [:]

    var isThread: Bool { type == .publicThread }

    func json(guildID: Snowflake) -> JSON {
        var object: [String: JSON] = [
            "id": .string(id.description),
            "type": JSON(type.rawValue),
            "guild_id": .string(guildID.description),
            "name": .string(name),
            "last_message_id": JSON(lastMessageID?.description),
            "rate_limit_per_user": 0,
            "parent_id": JSON(parentID?.description),
        ]
        switch type {
        case .publicThread:
            let metadata = thread ?? ThreadMetadata(createdAt: id.date)
            object["flags"] = 0
            object["owner_id"] = JSON(ownerID?.description)
            object["message_count"] = JSON(messageCount)
            object["member_count"] = 1
            object["total_message_sent"] = JSON(totalMessageSent)
            object["applied_tags"] = .array(appliedTags.map { .string($0.description) })
            object["thread_metadata"] = [
                "archived": .bool(metadata.archived),
                "locked": .bool(metadata.locked),
                "auto_archive_duration": JSON(metadata.autoArchiveDuration),
                "archive_timestamp": .string(ISO8601.string(metadata.archivedAt ?? metadata.createdAt)),
                "create_timestamp": .string(ISO8601.string(metadata.createdAt)),
                "invitable": false,
            ]
        case .guildForum:
            object["flags"] = requiresTag ? 16 : 0
            object["position"] = 1
            object["permission_overwrites"] = .array(permissionOverwrites.map(\.json))
            object["nsfw"] = false
            object["topic"] = .null
            object["available_tags"] = .array(
                availableTags.map {
                    [
                        "id": .string($0.id.description), "name": .string($0.name), "moderated": false,
                        "emoji_id": nil, "emoji_name": nil,
                    ]
                }
            )
            object["default_reaction_emoji"] = .null
            object["default_thread_rate_limit_per_user"] = 0
            object["default_sort_order"] = .null
            object["default_forum_layout"] = 0
            object["template"] = ""
        case .guildText:
            object["flags"] = 0
            object["position"] = 0
            object["permission_overwrites"] = []
            object["nsfw"] = false
            object["topic"] = .null
        }
        return .object(object)
    }
}

/// A channel's permission overwrite: type 0 a role (the guild's id is `@everyone`), 1 a member.
struct PermissionOverwrite: Sendable {
    var id: Snowflake
    var type: Int
    var allow: UInt64
    var deny: UInt64

    var json: JSON {
        ["id": .string(id.description), "type": JSON(type), "allow": .string(String(allow)), "deny": .string(String(deny))]
    }
}

enum ISO8601 {
    static func string(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .colon))
    }

    static func date(_ text: String) -> Date? {
        (try? Date(text, strategy: .iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .colon)))
            ?? (try? Date(text, strategy: .iso8601))
    }
}

extension DiscordWorld {
    /// The application the bot belongs to, owned by the support agent's account, in the shape of
    /// Discord's `PrivateApplicationResponse`.
    /// GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19) while the intent is on: an unverified app.
    var applicationFlags: Int {
        state.withLock { $0.messageContentIntentEnabled } ? 1 << 19 : 0
    }

    var applicationJSON: JSON {
        [
            "id": .string(applicationID.description),
            "name": "ThreadDesk Emulator",
            "icon": nil,
            "description": "",
            "type": nil,
            "bot": bot.json,
            "bot_public": false,
            "bot_require_code_grant": false,
            // An Ed25519 public key's 32 bytes in hex; nothing is signed with it here.
            "verify_key": .string(String(repeating: "0", count: 64)),
            "flags": JSON(applicationFlags),
            "flags_new": .string(String(applicationFlags)),
            "redirect_uris": [],
            "interactions_endpoint_url": nil,
            "role_connections_verification_url": nil,
            "owner": agent.json,
            "approximate_guild_count": 1,
            "approximate_user_install_count": 0,
            "approximate_user_authorization_count": 0,
            "explicit_content_filter": 0,
            "team": nil,
            "eligible_oauth2_scopes": ["bot", "applications.commands"],
        ]
    }
}
