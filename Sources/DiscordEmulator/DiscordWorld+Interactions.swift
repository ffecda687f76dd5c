import DiscordREST
import Foundation
import Synchronization

/// The agent using a command: what the control API asks for, as Discord's client would send it.
struct Invocation: Sendable {
    var commandName: String
    var channelID: Snowflake
    var options: [DiscordEmulator.CommandOption]
    /// Who uses it: the guild's owner (the agent) unless a test plays another member.
    var member: Snowflake
    /// An autocomplete request (type 4) instead of running the command (type 2).
    var autocomplete: Bool
}

extension DiscordWorld {
    /// Starts an interaction and dispatches INTERACTION_CREATE to every gateway session. Refused,
    /// with nothing dispatched, where Discord's client would not offer it: a command not
    /// registered, a member without its `default_member_permissions` (unless an admin allowed
    /// them the commands under Integrations), options it does not declare.
    func startInteraction(_ invocation: Invocation) throws(DiscordFailure) -> Snowflake {
        try state.withLock { state throws(DiscordFailure) -> Snowflake in
            guard let command = state.commands.first(where: { $0.definition.type == 1 && $0.definition.name == invocation.commandName })
            else { throw .unknownCommand }
            guard let channel = state.channels[invocation.channelID] else { throw .unknownChannel }
            guard channel.type != .guildForum else { throw .nonTextChannel }
            guard state.users[invocation.member] != nil else { throw .unknownMember }
            // What Discord computes for the member in this channel (a thread: its parent's overwrites).
            let held = permissions(of: invocation.member, in: channel.id, state: state)
            let overridden = !state.commandsAllowedFor.isDisjoint(with: [guildID, invocation.member] + (state.memberRoles[invocation.member] ?? []))
            guard overridden || Permissions.allows(held, required: command.definition.defaultMemberPermissions) else {
                throw .missingPermissions
            }
            let options = try Self.optionValues(
                invocation.options, declared: command.definition.options, autocomplete: invocation.autocomplete,
                path: ["data", "options"])
            if invocation.autocomplete, Self.focusedCount(options) != 1 {
                throw .invalidForm(
                    ["data", "options"], code: "AUTOCOMPLETE_FOCUSED_INVALID", message: "Exactly one option must be focused.")
            }
            let id = ids.next()
            var interaction = EmulatedInteraction(
                id: id, token: EmulatedInteraction.makeToken(id: id), type: invocation.autocomplete ? 4 : 2,
                commandID: command.id, commandName: command.definition.name, channelID: channel.id, userID: invocation.member,
                locale: state.memberLocales[invocation.member] ?? "en-US", createdAt: configuration.clock.now)
            var data: [String: JSON] = [
                "id": .string(command.id.description), "name": .string(command.definition.name), "type": 1,
                "guild_id": .string(self.guild(of: channel).description),
            ]
            if !options.isEmpty { data["options"] = .array(options) }
            dispatch(&interaction, channel: channel, data: .object(data), permissions: held, state: &state)
            return id
        }
    }

    /// Keeps the interaction with the exact INTERACTION_CREATE it makes, and dispatches that to
    /// every gateway session.
    func dispatch(
        _ interaction: inout EmulatedInteraction, channel: EmulatedChannel, data: JSON, message: JSON? = nil, permissions held: UInt64,
        state: inout State
    ) {
        var payload = interactionJSON(interaction, channel: channel, data: data, permissions: held, state: state)
        if let message { payload = merging(payload, ["message": message]) }
        interaction.payload = payload
        state.interactions[interaction.id] = interaction
        state.counters.interactionsCreated += 1
        state.gateway.dispatch("INTERACTION_CREATE", payload, intent: nil, author: nil)
    }

    private func interactionJSON(
        _ interaction: EmulatedInteraction, channel: EmulatedChannel, data: JSON, permissions held: UInt64, state: State
    ) -> JSON {
        let guild = JSON.string(self.guild(of: channel).description)
        let permissions = JSON.string(String(held))
        return [
            "id": .string(interaction.id.description),
            "application_id": .string(applicationID.description),
            "type": JSON(interaction.type),
            "data": data,
            "guild": ["id": guild, "locale": "en-US", "features": []],
            "guild_id": guild,
            "channel": [
                "id": .string(channel.id.description), "type": JSON(channel.type.rawValue), "guild_id": guild,
                "parent_id": JSON(channel.parentID?.description), "name": .string(channel.name), "flags": 0,
                "permissions": permissions,
            ],
            "channel_id": .string(channel.id.description),
            "member": merging(
                memberJSON(interaction.userID, state: state, withUser: true),
                ["permissions": permissions, "unusual_dm_activity_until": nil]),
            "token": .string(interaction.token),
            "version": 1,
            "app_permissions": .string(String(Permissions.bot)),
            "locale": .string(interaction.locale),
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": ["0": guild],
            "context": 0,
            "attachment_size_limit": JSON(configuration.maxFileSize),
        ]
    }

    /// The options as Discord puts them in `data.options`: each checked against the command's
    /// declaration, its value typed as the option is (a focused one stays the text typed so far).
    static func optionValues(
        _ given: [DiscordEmulator.CommandOption], declared: [CommandOptionSpec], autocomplete: Bool, path: [String]
    ) throws(DiscordFailure) -> [JSON] {
        var result: [JSON] = []
        for (index, option) in given.enumerated() {
            let here = path + [String(index)]
            guard let spec = declared.first(where: { $0.name == option.name }), spec.type == option.type else {
                throw .invalidForm(
                    here + ["name"], code: "APPLICATION_COMMAND_OPTION_UNKNOWN",
                    message: "The command has no option \"\(option.name)\" of type \(option.type).")
            }
            var object: [String: JSON] = ["name": .string(option.name), "type": JSON(option.type)]
            if spec.type <= 2 {
                object["options"] = .array(
                    try optionValues(option.options ?? [], declared: spec.options, autocomplete: autocomplete, path: here + ["options"]))
            } else if option.focused == true {
                guard autocomplete, spec.autocomplete else {
                    throw .invalidForm(
                        here + ["focused"], code: "AUTOCOMPLETE_FOCUSED_INVALID", message: "This option has no autocomplete.")
                }
                object["value"] = .string(option.value ?? "")
                object["focused"] = true
            } else {
                object["value"] = try typedValue(option.value ?? "", type: spec.type, path: here + ["value"])
            }
            result.append(.object(object))
        }
        let subcommand = declared.contains { $0.type <= 2 }
        if subcommand, given.count != 1 {
            throw .invalidForm(path, code: "APPLICATION_COMMAND_SUBCOMMAND_REQUIRED", message: "Choose exactly one sub-command.")
        }
        if !autocomplete, let missing = declared.first(where: { spec in spec.required && !given.contains { $0.name == spec.name } }) {
            throw .invalidForm(path, code: "APPLICATION_COMMAND_OPTION_REQUIRED", message: "Option \"\(missing.name)\" is required.")
        }
        return result
    }

    private static func typedValue(_ text: String, type: Int, path: [String]) throws(DiscordFailure) -> JSON {
        switch type {
        case 3:
            return .string(text)
        case 4:
            guard let number = Int(text), abs(number) <= 1 << 53 else { break }
            return JSON(number)
        case 10:
            guard let number = Double(text), number.isFinite else { break }
            return .number(number)
        case 5:
            guard let flag = Bool(text) else { break }
            return .bool(flag)
        default:
            // Users, channels, roles, mentionables and attachments are given by id.
            guard Snowflake(text) != nil else { break }
            return .string(text)
        }
        throw .invalidForm(path, code: "APPLICATION_COMMAND_OPTION_VALUE_INVALID", message: "Value \"\(text)\" does not fit option type \(type).")
    }

    private static func focusedCount(_ options: [JSON]) -> Int {
        options.reduce(0) { count, option in
            count + (option["focused"] == true ? 1 : 0) + focusedCount(option["options"]?.arrayValue ?? [])
        }
    }
}
