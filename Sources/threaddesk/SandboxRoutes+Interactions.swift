import DiscordEmulator
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskServer

/// The console's buttons and modals: the agent clicks a message's button (a draft note's Send,
/// Edit, Discard) as in Discord, reads what ThreadDesk answered, and sends the modal it opened.
/// Each route only starts or reads an interaction; the page polls for the answer.
extension SandboxRoutes {
    /// An interaction as the agent's Discord client shows it.
    struct InteractionView: Codable, Sendable {
        struct Modal: Codable, Sendable {
            struct Input: Codable, Sendable {
                var customId: String
                var label: String
                var value: String?
                var maxLength: Int?
                var required: Bool
            }
            var customId: String
            var title: String
            var inputs: [Input]
            var submitted: Bool
        }

        var id: String
        /// 3 a button clicked, 5 a modal submitted (2 a command run).
        var type: Int
        var customId: String?
        var channelId: String
        var messageId: String?
        /// ThreadDesk answered it (a deferred update says nothing more until a follow-up).
        var acknowledged: Bool
        var callbackType: Int?
        var content: String?
        var ephemeral: Bool
        var followups: [String]
        /// The modal ThreadDesk answered with, to show the agent.
        var modal: Modal?

        private enum CodingKeys: String, CodingKey {
            case id, type, customId, channelId, messageId, acknowledged, callbackType, content, ephemeral, followups, modal
        }

        /// Every key, `null` when there is nothing (no answer yet, no modal): the page reads them all.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(type, forKey: .type)
            try container.encode(customId, forKey: .customId)
            try container.encode(channelId, forKey: .channelId)
            try container.encode(messageId, forKey: .messageId)
            try container.encode(acknowledged, forKey: .acknowledged)
            try container.encode(callbackType, forKey: .callbackType)
            try container.encode(content, forKey: .content)
            try container.encode(ephemeral, forKey: .ephemeral)
            try container.encode(followups, forKey: .followups)
            try container.encode(modal, forKey: .modal)
        }

        init(_ snapshot: DiscordEmulator.InteractionSnapshot) {
            (id, type, customId, channelId, messageId) = (snapshot.id, snapshot.type, snapshot.customID, snapshot.channelID, snapshot.messageID)
            (acknowledged, callbackType, content, ephemeral, followups) = (
                snapshot.acknowledged, snapshot.callbackType, snapshot.content, snapshot.ephemeral, snapshot.followups
            )
            modal = snapshot.modal.map { modal in
                Modal(
                    customId: modal.customID, title: modal.title,
                    inputs: modal.inputs.map { .init(customId: $0.customID, label: $0.label, value: $0.value, maxLength: $0.maxLength, required: $0.required) },
                    submitted: modal.submitted)
            }
        }
    }

    struct Click: Decodable { var customId: String }
    struct ModalValues: Decodable { var values: [String: String] }

    /// Discord's limits: a `custom_id` is at most 100 characters; a modal holds at most 5 inputs of 4000.
    static let maxCustomID = 100
    static let maxModalInputs = 5
    static let maxInputLength = 4000

    func registerInteractions(on sandbox: RouterGroup<ThreadDeskRequestContext>) {
        // A click as the console's agent (the guild's owner, as the command box and the replies).
        sandbox.post("api/messages/:channel/:id/click") { request, context in
            guard let bytes = try? await request.body.collect(upTo: 16 * 1024),
                let click = try? JSONDecoder().decode(Click.self, from: Data(bytes.readableBytesView)),
                !click.customId.isEmpty, click.customId.count <= Self.maxCustomID
            else {
                return try Self.problem("invalid_click", "Send {\"customId\": \"…\"}: a button's custom id, 1–100 characters.", .badRequest)
            }
            do {
                let started = try discord.clickButton(
                    messageID: context.parameters.get("id") ?? "", inChannel: context.parameters.get("channel") ?? "", customID: click.customId)
                return try Self.json(["id": started.id], status: .created)
            } catch {
                return try Self.problem("discord_refused", "\(error)", .badRequest)
            }
        }
        sandbox.get("api/interactions/:id") { _, context in
            guard let snapshot = discord.interaction(context.parameters.get("id") ?? "") else {
                return try Self.problem("unknown_interaction", "No interaction has this id.", .notFound)
            }
            return try Self.json(InteractionView(snapshot))
        }
        // The modal an interaction opened, sent with the agent's values: a new interaction, whose id this answers.
        sandbox.post("api/interactions/:id/modal") { request, context in
            guard let bytes = try? await request.body.collect(upTo: 64 * 1024) else {
                return try Self.problem("body_too_large", "A modal's values are at most 64 KiB.", .contentTooLarge)
            }
            guard let modal = try? JSONDecoder().decode(ModalValues.self, from: Data(bytes.readableBytesView)),
                modal.values.count <= Self.maxModalInputs, modal.values.allSatisfy({ !$0.key.isEmpty && $0.value.utf16.count <= Self.maxInputLength })
            else {
                return try Self.problem(
                    "invalid_modal", "Send {\"values\": {\"text\": \"…\"}}: at most 5 inputs by custom id, each at most 4000 characters.", .badRequest)
            }
            let id = context.parameters.get("id") ?? ""
            guard discord.interaction(id) != nil else {
                return try Self.problem("unknown_interaction", "No interaction has this id.", .notFound)
            }
            do {
                let submitted = try discord.submitModal(interactionID: id, values: modal.values)
                return try Self.json(["id": submitted.id], status: .created)
            } catch {
                return try Self.problem("discord_refused", "\(error)", .badRequest)
            }
        }
    }

    static func problem(_ code: String, _ message: String, _ status: HTTPResponse.Status) throws -> Response {
        try json(["error": ["code": code, "message": message]], status: status)
    }
}
