import Foundation
import Hummingbird

/// The control API's commands, interactions, webhooks and roles over HTTP, for the sandbox
/// console and Python tests.
extension DiscordEmulator {
    struct CommandRequest: Decodable {
        var name: String
        var options: [CommandOption]?
        /// Who runs it (a user id); the agent, the guild's owner, when absent.
        var member: String?
    }

    struct ClickRequest: Decodable {
        var customId: String
        /// Who clicks (a user id); the agent when absent.
        var member: String?
    }

    struct ModalRequest: Decodable {
        /// Each input's value by its `custom_id`; an input left out keeps its prefilled value.
        var values: [String: String]?
        var member: String?
    }

    struct RoleRequest: Decodable {
        var name: String
        /// Its guild-wide permissions, a bitfield as a decimal string.
        var permissions: String?
    }

    func addInteractionControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/_emulator")
        control.post("/threads/:id/commands") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: CommandRequest.self, context: context)
                return try self.runCommand(
                    body.name, inChannel: context.parameters.get("id") ?? "", options: body.options ?? [],
                    as: body.member)
            }
        }
        control.post("/threads/:id/autocomplete") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: CommandRequest.self, context: context)
                return try self.autocomplete(
                    body.name, inChannel: context.parameters.get("id") ?? "", options: body.options ?? [],
                    as: body.member)
            }
        }
        control.get("/interactions/:id") { _, context in
            try await Self.answer {
                guard let snapshot = self.interaction(context.parameters.get("id") ?? "") else {
                    throw DiscordFailure.unknownInteraction
                }
                return snapshot
            }
        }
        control.post("/messages/:channel/:message/click") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: ClickRequest.self, context: context)
                return try self.clickButton(
                    messageID: context.parameters.get("message") ?? "", inChannel: context.parameters.get("channel") ?? "",
                    customID: body.customId, as: body.member)
            }
        }
        control.post("/interactions/:id/modal") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: ModalRequest.self, context: context)
                return try self.submitModal(interactionID: context.parameters.get("id") ?? "", values: body.values ?? [:], as: body.member)
            }
        }
        control.post("/interactions/:id/redeliver") { _, context in
            try await Self.answer {
                let id = context.parameters.get("id") ?? ""
                try self.redeliver(interactionID: id)
                guard let snapshot = self.interaction(id) else { throw DiscordFailure.unknownInteraction }
                return snapshot
            }
        }
        control.get("/commands") { _, _ in try Self.encode(self.commands) }
        control.get("/webhooks") { _, _ in try Self.encode(self.webhooks) }
        control.post("/roles") { request, context in
            let body = try await request.decode(as: RoleRequest.self, context: context)
            return try Self.encode(["id": self.createRole(named: body.name, permissions: body.permissions.flatMap { UInt64($0) } ?? 0)])
        }
    }
}
