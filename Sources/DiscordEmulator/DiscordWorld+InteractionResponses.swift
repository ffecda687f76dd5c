import DiscordREST
import Foundation
import Synchronization

/// The application's side of an interaction: one callback within 3 s, then follow-ups and edits
/// with the interaction's token for 15 minutes, all timed on the emulator's clock.
extension DiscordWorld {
    /// `POST /interactions/{id}/{token}/callback`. Returns the callback response object (for
    /// `with_response=true`).
    func respond(to interactionID: Snowflake, token: String, _ callback: InteractionCallback) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard var interaction = state.interactions[interactionID], interaction.token == token else {
                throw .unknownInteraction
            }
            if interaction.acknowledged { throw .alreadyAcknowledged }
            guard configuration.clock.now - interaction.createdAt <= configuration.interactionResponseWindow else {
                throw .unknownInteraction
            }
            let allowed = InteractionCallback.allowedTypes(for: interaction)
            guard allowed.contains(callback.type) else {
                throw .invalidForm(
                    ["type"], code: "INTERACTION_RESPONSE_TYPE_INVALID",
                    message: "Interaction response type must be one of {\(allowed.map(String.init).joined(separator: ", "))} for this interaction.")
            }
            var resource: JSON?
            switch callback {
            case .message(let message):
                interaction.ephemeral = message.flags & InteractionCallback.ephemeral != 0
                let original = try answer(message, to: &interaction, followup: false, state: &state)
                interaction.originalID = original.id
                resource = ["type": 4, "message": json(original, in: state)]
            case .deferred(let flags):
                interaction.ephemeral = flags & InteractionCallback.ephemeral != 0
                var loading = NewMessage(content: "")
                loading.flags = flags | InteractionCallback.loading
                interaction.originalID = try answer(loading, to: &interaction, followup: false, state: &state).id
            case .choices(let choices):
                interaction.choices = choices
            case .deferredUpdate:
                // Editing `@original` from now on edits the message clicked.
                interaction.originalID = interaction.messageID
            case .update(let edit):
                guard let messageID = interaction.messageID,
                    let message = state.messages[interaction.channelID]?.first(where: { $0.id == messageID })
                else { throw .unknownMessage }
                try Self.checkNotEmpty(after: edit, of: message)
                let updated = try updateMessage(messageID, in: interaction.channelID, state: &state) { edit.apply(to: &$0) }
                interaction.originalID = messageID
                resource = ["type": 7, "message": json(updated, in: state)]
            case .modal(let modal):
                interaction.modal = modal
            }
            interaction.callbackType = callback.type
            state.interactions[interactionID] = interaction
            var summary: [String: JSON] = ["id": .string(interactionID.description), "type": JSON(interaction.type)]
            if let original = interaction.originalID {
                summary["response_message_id"] = .string(original.description)
                summary["response_message_loading"] = .bool(callback.type == 5)
                summary["response_message_ephemeral"] = .bool(interaction.ephemeral)
            }
            var response: [String: JSON] = ["interaction": .object(summary)]
            if let resource { response["resource"] = resource }
            return .object(response)
        }
    }

    /// `POST /webhooks/{application}/{token}`: a follow-up, once a command, a click or a submit was
    /// answered with a message or a deferral (not a modal). After a deferral, the first one fills
    /// the loading message instead, as Discord does.
    func followUp(token: String, _ message: NewMessage) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            var interaction = try liveInteraction(token: token, state: state)
            guard interaction.type != 4, let callback = interaction.callbackType, (4...7).contains(callback) else { throw .unknownWebhook }
            if let original = interaction.originalID, let loading = storedMessage(original, of: interaction, state: state),
                loading.flags & InteractionCallback.loading != 0
            {
                return json(try editAnswer(original, of: &interaction, MessageEdit(content: message.content), state: &state), in: state)
            }
            let ephemeral = message.flags & InteractionCallback.ephemeral != 0
            let sent = try answer(message, to: &interaction, followup: true, ephemeral: ephemeral, state: &state)
            interaction.followupIDs.append(sent.id)
            state.interactions[interaction.id] = interaction
            return json(sent, in: state)
        }
    }

    /// `GET /webhooks/{application}/{token}/messages/{id or @original}`.
    func answerMessage(token: String, messageID: Snowflake?) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            let interaction = try liveInteraction(token: token, state: state)
            guard let id = messageID ?? interaction.originalID, let message = storedMessage(id, of: interaction, state: state) else {
                throw .unknownMessage
            }
            return json(message, in: state)
        }
    }

    /// `PATCH /webhooks/{application}/{token}/messages/{id or @original}`: after a deferral,
    /// editing the original gives the loading message its content.
    func editAnswer(token: String, messageID: Snowflake?, _ edit: MessageEdit) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            var interaction = try liveInteraction(token: token, state: state)
            guard let id = messageID ?? interaction.originalID else { throw .unknownMessage }
            return json(try editAnswer(id, of: &interaction, edit, state: &state), in: state)
        }
    }

    /// `DELETE /webhooks/{application}/{token}/messages/{id or @original}`.
    func deleteAnswer(token: String, messageID: Snowflake?) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            var interaction = try liveInteraction(token: token, state: state)
            guard let id = messageID ?? interaction.originalID,
                id == interaction.originalID || interaction.followupIDs.contains(id)
            else { throw .unknownMessage }
            if let index = interaction.ephemeralMessages.firstIndex(where: { $0.id == id }) {
                interaction.ephemeralMessages.remove(at: index)
            } else {
                try deleteMessage(id, in: interaction.channelID, state: &state)
            }
            state.interactions[interaction.id] = interaction
        }
    }

    /// The interaction a token belongs to, while the token works (15 minutes on the clock).
    private func liveInteraction(token: String, state: State) throws(DiscordFailure) -> EmulatedInteraction {
        guard let interaction = state.interactions.values.first(where: { $0.token == token }),
            configuration.clock.now - interaction.createdAt <= configuration.interactionTokenLifetime
        else { throw .invalidWebhookToken }
        return interaction
    }

    private func storedMessage(_ id: Snowflake, of interaction: EmulatedInteraction, state: State) -> EmulatedMessage? {
        guard id == interaction.originalID || interaction.followupIDs.contains(id) else { return nil }
        return interaction.ephemeralMessages.first { $0.id == id }
            ?? state.messages[interaction.channelID]?.first { $0.id == id }
    }

    /// Posts an answer as the bot (type 20, `interaction_metadata`, the application as
    /// `webhook_id`); an ephemeral one stays on the interaction, never in the channel.
    private func answer(
        _ message: NewMessage, to interaction: inout EmulatedInteraction, followup: Bool, ephemeral: Bool? = nil,
        state: inout State
    ) throws(DiscordFailure) -> EmulatedMessage {
        var message = message
        let user = state.users[interaction.userID]?.json ?? agent.json
        let triggering = interaction.trigger.flatMap { state.interactions[$0] }.map { $0.metadata(user: user, guildID: guildID, original: nil) }
        message.origin = MessageOrigin(
            webhookID: applicationID, applicationID: applicationID,
            interactionMetadata: interaction.metadata(
                user: user, guildID: guildID, original: followup ? interaction.originalID : nil, triggering: triggering))
        // A command's answers are CHAT_INPUT_COMMAND messages; a click's or a submit's are DEFAULT.
        let type = interaction.commandID == nil ? MessageType.default.rawValue : MessageType.chatInputCommand.rawValue
        guard ephemeral ?? interaction.ephemeral else {
            return try postMessage(message, to: interaction.channelID, author: bot.id, type: type, state: &state).message
        }
        message.flags |= InteractionCallback.ephemeral
        let kept = EmulatedMessage(
            id: ids.next(), channelID: interaction.channelID, authorID: bot.id, content: message.content, type: type,
            attachments: message.attachments, nonce: nil, editedAt: nil, mentionEveryone: false, mentionIDs: [],
            reference: nil, reactions: [], flags: message.flags, origin: message.origin, components: message.components)
        interaction.ephemeralMessages.append(kept)
        return kept
    }

    private func editAnswer(
        _ id: Snowflake, of interaction: inout EmulatedInteraction, _ edit: MessageEdit, state: inout State
    ) throws(DiscordFailure) -> EmulatedMessage {
        guard let stored = storedMessage(id, of: interaction, state: state) else { throw .unknownMessage }
        // A loading message may stay empty until filled; any other edit must leave something to show.
        if stored.flags & InteractionCallback.loading == 0 { try Self.checkNotEmpty(after: edit, of: stored) }
        let fill = { (message: inout EmulatedMessage) in
            edit.apply(to: &message)
            message.flags &= ~InteractionCallback.loading
        }
        if let index = interaction.ephemeralMessages.firstIndex(where: { $0.id == id }) {
            fill(&interaction.ephemeralMessages[index])
            interaction.ephemeralMessages[index].editedAt = Date()
            state.interactions[interaction.id] = interaction
            return interaction.ephemeralMessages[index]
        }
        return try updateMessage(id, in: interaction.channelID, state: &state, fill)
    }
}
