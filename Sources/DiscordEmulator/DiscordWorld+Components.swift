import DiscordREST
import Synchronization

/// A member clicks a button of a message, as Discord's client would send it.
struct ComponentClick: Sendable {
    var channelID: Snowflake
    var messageID: Snowflake
    var customID: String
    var member: Snowflake
}

extension DiscordFailure {
    /// The control API's refusal of a click Discord's client could not make.
    static func noSuchButton(_ reason: String) -> DiscordFailure {
        DiscordFailure(status: 400, code: 0, message: "Nothing to click: \(reason)")
    }
}

extension DiscordWorld {
    /// A click: INTERACTION_CREATE type 3 with `data {custom_id, component_type: 2}` and the whole
    /// `message`. Refused, nothing dispatched, where Discord's client shows nothing to click: a
    /// message that is not the application's, no such button, a link or disabled one, or a member
    /// who cannot see the channel.
    func clickButton(_ click: ComponentClick) throws(DiscordFailure) -> Snowflake {
        try state.withLock { state throws(DiscordFailure) -> Snowflake in
            guard let channel = state.channels[click.channelID] else { throw .unknownChannel }
            guard let message = state.messages[click.channelID]?.first(where: { $0.id == click.messageID }) else { throw .unknownMessage }
            guard state.users[click.member] != nil else { throw .unknownMember }
            guard message.authorID == bot.id || message.origin.applicationID == applicationID else {
                throw .noSuchButton("only the application's own messages send it interactions")
            }
            let buttons = message.components.flatMap { $0["components"]?.arrayValue ?? [] }
            guard let button = buttons.first(where: { $0["custom_id"]?.stringValue == click.customID }) else {
                throw .noSuchButton("the message has no button \"\(click.customID)\"")
            }
            guard button["disabled"]?.boolValue != true else { throw .noSuchButton("the button is disabled") }
            let held = permissions(of: click.member, in: channel.id, state: state)
            guard held & Permissions.viewChannel != 0 else { throw .missingPermissions }
            let id = ids.next()
            var interaction = EmulatedInteraction(
                id: id, token: EmulatedInteraction.makeToken(id: id), type: 3, channelID: channel.id, userID: click.member,
                messageID: message.id, customID: click.customID, locale: state.memberLocales[click.member] ?? "en-US",
                createdAt: configuration.clock.now)
            let data: JSON = ["custom_id": .string(click.customID), "component_type": 2]
            dispatch(&interaction, channel: channel, data: data, message: json(message, in: state), permissions: held, state: &state)
            return id
        }
    }

    /// The member sends the modal that answered `interactionID`: INTERACTION_CREATE type 5, under
    /// a new id and token, its inputs as the modal laid them out (rows or labels). An input left
    /// out keeps the value the modal filled in. Refused, nothing dispatched, where Discord's client
    /// would not send it: no modal open, one already sent, another member, a required input
    /// empty, a value outside its lengths.
    func submitModal(of interactionID: Snowflake, values: [String: String], member: Snowflake?) throws(DiscordFailure) -> Snowflake {
        try state.withLock { state throws(DiscordFailure) -> Snowflake in
            guard var source = state.interactions[interactionID] else { throw .unknownInteraction }
            guard let modal = source.modal, !source.modalSubmitted else {
                throw .noSuchButton("no modal is open for interaction \(interactionID)")
            }
            // Only the member the modal was shown to can send it.
            guard member == nil || member == source.userID else { throw .missingPermissions }
            guard let channel = state.channels[source.channelID] else { throw .unknownChannel }
            if let unknown = values.keys.sorted().first(where: { key in !modal.inputs.contains { $0.customID == key } }) {
                throw .invalidForm(["data", "components"], code: "COMPONENT_NOT_FOUND", message: "The modal has no input \"\(unknown)\".")
            }
            var submitted: [JSON] = []
            for (index, input) in modal.inputs.enumerated() {
                let value = values[input.customID] ?? input.value ?? ""
                let length = value.utf16.count
                let path = ["data", "components", String(index)]
                if input.required && value.isEmpty {
                    throw .invalidForm(path, code: "BASE_TYPE_REQUIRED", message: "\"\(input.label)\" is required.")
                }
                if !value.isEmpty, length < (input.minLength ?? 0) || length > (input.maxLength ?? 4000) {
                    throw .invalidForm(
                        path, code: "BASE_TYPE_BAD_LENGTH",
                        message: "Must be between \(input.minLength ?? 0) and \(input.maxLength ?? 4000) in length.")
                }
                let field: JSON = ["type": 4, "id": JSON(input.id), "custom_id": .string(input.customID), "value": .string(value)]
                submitted.append(
                    input.wrapperType == 18
                        ? ["type": 18, "id": JSON(input.wrapperID), "component": field]
                        : ["type": 1, "id": JSON(input.wrapperID), "components": [field]])
            }
            source.modalSubmitted = true
            state.interactions[interactionID] = source
            let held = permissions(of: source.userID, in: channel.id, state: state)
            let id = ids.next()
            var submit = EmulatedInteraction(
                id: id, token: EmulatedInteraction.makeToken(id: id), type: 5, channelID: channel.id, userID: source.userID,
                messageID: source.messageID, customID: modal.customID, locale: source.locale, trigger: source.id,
                createdAt: configuration.clock.now)
            let message = source.messageID.flatMap { messageID in state.messages[channel.id]?.first { $0.id == messageID } }
            let data: JSON = ["custom_id": .string(modal.customID), "components": .array(submitted)]
            dispatch(&submit, channel: channel, data: data, message: message.map { json($0, in: state) }, permissions: held, state: &state)
            return id
        }
    }

    /// Dispatches an interaction's INTERACTION_CREATE again, the same id, token and payload, as
    /// Discord does when a session resumes and replays it.
    func redeliver(_ interactionID: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard let interaction = state.interactions[interactionID], !interaction.payload.isNull else { throw .unknownInteraction }
            state.gateway.dispatch("INTERACTION_CREATE", interaction.payload, intent: nil, author: nil)
        }
    }
}
