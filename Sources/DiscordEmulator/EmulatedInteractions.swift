import DiscordREST
import Foundation

/// A guild command the application registered.
struct EmulatedCommand: Sendable {
    var id: Snowflake
    /// Changes whenever the definition does, as Discord's does.
    var version: Snowflake
    var definition: CommandDefinition

    func json(applicationID: Snowflake, guildID: Snowflake) -> JSON {
        merging(
            definition.json,
            [
                "id": .string(id.description), "application_id": .string(applicationID.description),
                "version": .string(version.description), "guild_id": .string(guildID.description),
            ])
    }
}

/// An agent's use of a command (type 2), their typing into an autocomplete option (type 4), a
/// click on a button (type 3) or a modal's submit (type 5), and what the application answered.
struct EmulatedInteraction: Sendable {
    var id: Snowflake
    var token: String
    var type: Int
    /// Types 2 and 4: the command.
    var commandID: Snowflake?
    var commandName: String?
    var channelID: Snowflake
    var userID: Snowflake
    /// Type 3: the message clicked; type 5: the message whose button opened the modal, if one did.
    var messageID: Snowflake?
    /// Type 3: the button's `custom_id`; type 5: the modal's.
    var customID: String?
    /// The member's client language, as `locale` says it.
    var locale = "en-US"
    /// A modal the application opened in answer (callback 9); `modalSubmitted` once its form was sent.
    var modal: EmulatedModal?
    var modalSubmitted = false
    /// Type 5: the interaction whose answer opened the modal.
    var trigger: Snowflake?
    /// Exactly what INTERACTION_CREATE carried, to deliver again as a gateway replay would.
    var payload: JSON = .null
    /// On the emulator's clock: the 3 s to answer and the token's 15 minutes count from here.
    var createdAt: Duration
    /// The callback's type, once one was accepted.
    var callbackType: Int?
    var ephemeral = false
    /// The response message: in the channel, or among `ephemeralMessages`.
    var originalID: Snowflake?
    var followupIDs: [Snowflake] = []
    /// Messages only the agent sees (flag 64): never in the channel, never dispatched.
    var ephemeralMessages: [EmulatedMessage] = []
    var choices: [(name: String, value: JSON)] = []

    var acknowledged: Bool { callbackType != nil }

    /// What `interaction_metadata` says on the messages that answer it (`original`: on a
    /// follow-up, the response it follows; `triggering`: for a submit, the metadata of the
    /// interaction that opened the modal).
    func metadata(user: JSON, guildID: Snowflake, original: Snowflake?, triggering: JSON? = nil) -> JSON {
        var object: [String: JSON] = [
            "id": .string(id.description), "type": JSON(type), "user": user,
            "authorizing_integration_owners": ["0": .string(guildID.description)],
        ]
        if let original { object["original_response_message_id"] = .string(original.description) }
        if type == 3, let messageID { object["interacted_message_id"] = .string(messageID.description) }
        if type == 5, let triggering { object["triggering_interaction_metadata"] = triggering }
        return .object(object)
    }

    static func makeToken(id: Snowflake) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let prefix = Data("interaction:\(id):".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        return prefix + String((0..<160).map { _ in alphabet.randomElement()! })
    }
}

/// An incoming webhook of a text or forum channel.
struct EmulatedWebhook: Sendable {
    var id: Snowflake
    var channelID: Snowflake
    var name: String
    var token: String
    /// The application whose bot made it; its messages carry this `application_id`.
    var applicationID: Snowflake?

    func json(guildID: Snowflake, creator: JSON) -> JSON {
        [
            "id": .string(id.description), "type": 1, "channel_id": .string(channelID.description),
            "guild_id": .string(guildID.description), "name": .string(name), "avatar": nil,
            "token": .string(token), "application_id": JSON(applicationID?.description), "user": creator,
        ]
    }
}

/// A guild role, so that tests can have members "with role X".
struct EmulatedRole: Sendable {
    var id: Snowflake
    var name: String
    var position: Int
    var permissions: UInt64 = 0
    /// The bot's own role, which Discord makes (managed) when a bot is invited with permissions.
    var botID: Snowflake?

    /// No colour: `color` 0 and the `colors` Discord sends beside it (which libraries require).
    static let noColors: JSON = ["primary_color": 0, "secondary_color": nil, "tertiary_color": nil]

    var json: JSON {
        [
            "id": .string(id.description), "name": .string(name), "color": 0, "colors": Self.noColors, "hoist": false, "icon": nil,
            "unicode_emoji": nil, "position": JSON(position), "permissions": .string(String(permissions)),
            "managed": .bool(botID != nil), "mentionable": false, "flags": 0,
            "tags": botID.map { ["bot_id": .string($0.description)] } ?? [:],
        ]
    }
}

/// Discord's permission bits the emulator reasons about.
enum Permissions {
    static let administrator: UInt64 = 1 << 3
    static let manageChannels: UInt64 = 1 << 4
    static let viewChannel: UInt64 = 1 << 10
    /// In a forum, Create Posts.
    static let sendMessages: UInt64 = 1 << 11
    /// Every permission Discord defines today (bits 0–50): what an owner or administrator holds.
    static let all: UInt64 = (1 << 51) - 1
    /// What `@everyone` may do in the emulated guild.
    static let everyone: UInt64 = 2_248_473_465_835_073
    /// The bot's, in the support forum: `@everyone` plus managing channels, threads and webhooks.
    static let bot: UInt64 = everyone | 1 << 4 | 1 << 29 | 1 << 34

    /// Whether a member holding `held` may see and run a command that asks for `required`
    /// (`default_member_permissions`: nil is everyone, 0 administrators only).
    static func allows(_ held: UInt64, required: UInt64?) -> Bool {
        guard let required else { return true }
        if held & administrator != 0 { return true }
        return required != 0 && held & required == required
    }
}
