import DiscordREST
import Foundation
import Synchronization

/// The control surface for slash commands and webhooks: act as the agent using a command, read
/// what the application answered, see what it registered.
extension DiscordEmulator {
    /// An option as the agent fills it in.
    public struct CommandOption: Sendable, Codable, Equatable {
        public var name: String
        /// 1 subcommand, 2 subcommand group, 3 string, 4 integer, 5 boolean, 10 number, …
        public var type: Int
        /// As typed; sent as a JSON string for type 3, a number for 4 and 10, a bool for 5, an
        /// id for 6–9 and 11 (a focused option: the text typed so far).
        public var value: String?
        public var focused: Bool?
        /// A subcommand's (or group's) own options.
        public var options: [CommandOption]?

        public init(name: String, type: Int, value: String? = nil, focused: Bool? = nil, options: [CommandOption]? = nil) {
            self.name = name
            self.type = type
            self.value = value
            self.focused = focused
            self.options = options
        }

        public static func string(_ name: String, _ value: String, focused: Bool = false) -> CommandOption {
            CommandOption(name: name, type: 3, value: value, focused: focused ? true : nil)
        }

        public static func subcommand(_ name: String, _ options: [CommandOption] = []) -> CommandOption {
            CommandOption(name: name, type: 1, options: options)
        }

        private enum CodingKeys: String, CodingKey { case name, type, value, focused, options }

        /// A value may come as JSON text, a number or a bool (the control API's callers send all three).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(Int.self, forKey: .type)
            focused = try container.decodeIfPresent(Bool.self, forKey: .focused)
            options = try container.decodeIfPresent([CommandOption].self, forKey: .options)
            switch try container.decodeIfPresent(JSON.self, forKey: .value) {
            case .string(let text)?: value = text
            case .bool(let flag)?: value = String(flag)
            case .number(let number)?: value = number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
            default: value = nil
            }
        }
    }

    public struct InteractionSnapshot: Sendable, Codable, Equatable {
        public var id: String
        /// 2 a command run, 3 a button clicked, 4 an autocomplete request, 5 a modal submitted.
        public var type: Int
        /// The command's name; empty for a click or a submit.
        public var commandName: String
        public var channelID: String
        /// A callback was accepted.
        public var acknowledged: Bool
        public var callbackType: Int?
        /// The response's content (after a deferral, the edited original's).
        public var content: String?
        public var ephemeral: Bool
        /// The autocomplete result's choices, names and values, in order.
        public var choices: [String]
        public var choiceValues: [String]
        /// Follow-up contents, in order.
        public var followups: [String]
        /// What answers the interaction, as the gateway delivered it (to deliver it again).
        public var token: String
        /// A click's button, or a submitted modal's `custom_id`.
        public var customID: String?
        /// The message clicked (for a submit: the one whose button opened the modal).
        public var messageID: String?
        /// The modal the application answered with (callback 9).
        public var modal: ModalSnapshot?
        /// After callback 6 or 7: the clicked message's content as it now is.
        public var updatedContent: String?
    }

    /// A modal as the member sees it: its title and each input, prefilled value included.
    public struct ModalSnapshot: Sendable, Codable, Equatable {
        public struct Input: Sendable, Codable, Equatable {
            public var customID: String
            public var label: String
            public var value: String?
            public var maxLength: Int?
            public var required: Bool
        }

        public var customID: String
        public var title: String
        public var inputs: [Input]
        /// The member sent it.
        public var submitted: Bool
    }

    public struct CommandSnapshot: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        public var description: String
        public var defaultMemberPermissions: String?
        public var optionNames: [String]
    }

    public struct WebhookSnapshot: Sendable, Codable, Equatable {
        public var id: String
        public var channelID: String
        public var name: String
    }

    /// Every permission, as Discord computes them for the guild's owner (the agent is the owner).
    public static let ownerPermissions = String(Permissions.all)

    /// A member runs `/name` in a channel (normally a forum thread): INTERACTION_CREATE (type 2)
    /// reaches every gateway session, with the member's roles and their permissions in that
    /// channel as Discord computes them. `member` is a user id (`addMember`); nil is the agent, the
    /// guild's owner. Refused, nothing dispatched, for a command not registered (10063), one the
    /// member may not use (50013), or options the command does not declare (50035).
    @discardableResult
    public func runCommand(
        _ name: String, inChannel channelID: String, options: [CommandOption] = [], as member: String? = nil
    ) throws(DiscordFailure) -> InteractionSnapshot {
        try invoke(name, channelID: channelID, options: options, member: member, autocomplete: false)
    }

    /// A member types into an autocomplete option (the one `focused`): INTERACTION_CREATE type 4.
    @discardableResult
    public func autocomplete(
        _ name: String, inChannel channelID: String, options: [CommandOption], as member: String? = nil
    ) throws(DiscordFailure) -> InteractionSnapshot {
        try invoke(name, channelID: channelID, options: options, member: member, autocomplete: true)
    }

    private func invoke(
        _ name: String, channelID: String, options: [CommandOption], member: String?, autocomplete: Bool
    ) throws(DiscordFailure) -> InteractionSnapshot {
        let id = try world.startInteraction(
            Invocation(
                commandName: name, channelID: try Self.snowflake(channelID), options: options, member: try member.map(Self.member) ?? world.agent.id,
                autocomplete: autocomplete))
        guard let snapshot = interaction(id.description) else { throw .unknownInteraction }
        return snapshot
    }

    /// An interaction as it stands now: whether and how the application answered it.
    public func interaction(_ id: String) -> InteractionSnapshot? {
        guard let id = Snowflake(id) else { return nil }
        return world.state.withLock { state in
            guard let interaction = state.interactions[id] else { return nil }
            func content(_ id: Snowflake) -> String? {
                (interaction.ephemeralMessages.first { $0.id == id }
                    ?? state.messages[interaction.channelID]?.first { $0.id == id })?.content
            }
            let updated = [6, 7].contains(interaction.callbackType ?? 0)
            return InteractionSnapshot(
                id: id.description, type: interaction.type, commandName: interaction.commandName ?? "",
                channelID: interaction.channelID.description, acknowledged: interaction.acknowledged,
                callbackType: interaction.callbackType, content: interaction.originalID.flatMap(content),
                ephemeral: interaction.ephemeral, choices: interaction.choices.map(\.name),
                choiceValues: interaction.choices.map { $0.value.stringValue ?? $0.value.doubleValue.map(Self.number) ?? "" },
                followups: interaction.followupIDs.compactMap(content), token: interaction.token, customID: interaction.customID,
                messageID: interaction.messageID?.description,
                modal: interaction.modal.map { modal in
                    ModalSnapshot(
                        customID: modal.customID, title: modal.title,
                        inputs: modal.inputs.map {
                            .init(customID: $0.customID, label: $0.label, value: $0.value, maxLength: $0.maxLength, required: $0.required)
                        },
                        submitted: interaction.modalSubmitted)
                },
                updatedContent: updated ? interaction.messageID.flatMap(content) : nil)
        }
    }

    /// A member clicks the button `customID` of a message (the agent when `member` is nil):
    /// INTERACTION_CREATE type 3 reaches every gateway session, with the message and the member's
    /// permissions in its channel. Refused, nothing dispatched, where Discord's client shows
    /// nothing to click (a message not the application's, no such enabled non-link button) or the
    /// member cannot see the channel (50013).
    @discardableResult
    public func clickButton(messageID: String, inChannel channelID: String, customID: String, as member: String? = nil)
        throws(DiscordFailure) -> InteractionSnapshot
    {
        let id = try world.clickButton(
            ComponentClick(
                channelID: try Self.snowflake(channelID), messageID: try Self.snowflake(messageID), customID: customID,
                member: try member.map(Self.member) ?? world.agent.id))
        guard let snapshot = interaction(id.description) else { throw .unknownInteraction }
        return snapshot
    }

    /// The member sends the modal that answered `interactionID`, `values` by input `custom_id`
    /// (an input left out keeps its prefilled value): INTERACTION_CREATE type 5, a new
    /// interaction, whose snapshot this is.
    @discardableResult
    public func submitModal(interactionID: String, values: [String: String], as member: String? = nil) throws(DiscordFailure)
        -> InteractionSnapshot
    {
        guard let source = Snowflake(interactionID) else { throw .unknownInteraction }
        let id = try world.submitModal(of: source, values: values, member: try member.map(Self.member))
        guard let snapshot = interaction(id.description) else { throw .unknownInteraction }
        return snapshot
    }

    /// Delivers an interaction again, the identical INTERACTION_CREATE (same id and token), as a
    /// gateway session's replay does: an application must answer it once.
    public func redeliver(interactionID: String) throws(DiscordFailure) {
        guard let id = Snowflake(interactionID) else { throw .unknownInteraction }
        try world.redeliver(id)
    }

    /// The INTERACTION_CREATE an interaction was delivered with (Discord's JSON, token included).
    public func interactionPayload(_ id: String) -> JSON? {
        guard let id = Snowflake(id) else { return nil }
        return world.state.withLock { $0.interactions[id]?.payload }
    }

    /// The guild's registered commands, in order.
    public var commands: [CommandSnapshot] {
        world.state.withLock { state in
            state.commands.map {
                CommandSnapshot(
                    id: $0.id.description, name: $0.definition.name, description: $0.definition.description,
                    defaultMemberPermissions: $0.definition.defaultMemberPermissions.map(String.init),
                    optionNames: $0.definition.options.map(\.name))
            }
        }
    }

    public var webhooks: [WebhookSnapshot] {
        world.state.withLock { state in
            state.webhooks.values.sorted { $0.id < $1.id }.map {
                WebhookSnapshot(id: $0.id.description, channelID: $0.channelID.description, name: $0.name)
            }
        }
    }

    /// A new guild role (GUILD_ROLE_CREATE) with these guild-wide permissions; its id, to give
    /// members (`addMember`).
    public func createRole(named name: String, permissions: UInt64 = 0) -> String {
        world.createRole(named: name, permissions: permissions).description
    }

    public var guildID: String { world.guildID.description }

    private static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

/// The control API's types by their short names, beside `DiscordEmulator.CommandOption` and the rest.
public typealias CommandOption = DiscordEmulator.CommandOption
public typealias InteractionSnapshot = DiscordEmulator.InteractionSnapshot
public typealias ModalSnapshot = DiscordEmulator.ModalSnapshot
public typealias CommandSnapshot = DiscordEmulator.CommandSnapshot
public typealias WebhookSnapshot = DiscordEmulator.WebhookSnapshot
