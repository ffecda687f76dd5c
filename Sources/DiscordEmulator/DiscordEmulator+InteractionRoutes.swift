import DiscordREST
import Foundation
import Hummingbird

/// Application commands, interaction callbacks and the interaction token's webhook routes.
extension DiscordEmulator {
    func addInteractionRoutes(to router: Router<BasicRequestContext>) {
        let world = self.world
        let configuration = self.configuration

        rest(router, .get, "/applications/{application_id}/commands", bucket: .route) { call throws(DiscordFailure) in
            try world.checkCommandPath(application: try call.snowflake("application_id"), guild: nil)
            return .ok([])
        }

        rest(router, .get, "/applications/{application_id}/guilds/{guild_id}/commands", bucket: .route) {
            call throws(DiscordFailure) in
            try world.checkCommandPath(application: try call.snowflake("application_id"), guild: try call.snowflake("guild_id"))
            return .ok(world.guildCommands())
        }

        rest(router, .put, "/applications/{application_id}/guilds/{guild_id}/commands", bucket: .route) {
            call throws(DiscordFailure) in
            try world.checkCommandPath(application: try call.snowflake("application_id"), guild: try call.snowflake("guild_id"))
            return .ok(try world.overwriteCommands(try CommandPayloads.definitions(call.body.json)))
        }

        rest(router, .post, "/interactions/{interaction_id}/{interaction_token}/callback", bucket: .route, auth: .pathToken) {
            call throws(DiscordFailure) in
            let callback = try InteractionCallback(call.body, ids: world.ids, maxFileSize: configuration.maxFileSize)
            let response = try world.respond(
                to: try call.snowflake("interaction_id"), token: call.parameters["interaction_token"] ?? "", callback)
            return try Self.flag(call.query["with_response"], name: "with_response") ? .ok(response) : .noContent
        }

        // `@original` before `{message_id}`: the router tries siblings in the order they were added.
        for template in ["/webhooks/{webhook_id}/{webhook_token}/messages/@original", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}"] {
            rest(router, .get, template, bucket: .route, auth: .pathToken) { call throws(DiscordFailure) in
                let (token, message) = try Self.answerPath(call, world: world)
                return .ok(try world.answerMessage(token: token, messageID: message))
            }
            rest(router, .patch, template, bucket: .route, auth: .pathToken) { call throws(DiscordFailure) in
                let (token, message) = try Self.answerPath(call, world: world)
                let edit = try RESTPayloads.messageEdit(call.body.object, path: [])
                return .ok(try world.editAnswer(token: token, messageID: message, edit))
            }
            rest(router, .delete, template, bucket: .route, auth: .pathToken) { call throws(DiscordFailure) in
                let (token, message) = try Self.answerPath(call, world: world)
                try world.deleteAnswer(token: token, messageID: message)
                return .noContent
            }
        }
    }

    /// An interaction token's message route: the token, and the message (nil for `@original`).
    /// Only the application's own id names interaction webhooks.
    private static func answerPath(_ call: RESTCall, world: DiscordWorld) throws(DiscordFailure) -> (String, Snowflake?) {
        guard try call.snowflake("webhook_id") == world.applicationID else { throw .unknownWebhook }
        let token = call.parameters["webhook_token"] ?? ""
        guard let message = call.parameters["message_id"], message != "@original" else { return (token, nil) }
        return (token, try call.snowflake("message_id"))
    }

    /// A boolean query parameter as Discord reads one (`true`/`false`, `1`/`0`, any case).
    static func flag(_ value: String?, name: String) throws(DiscordFailure) -> Bool {
        switch value?.lowercased() {
        case nil, "false", "0": return false
        case "true", "1": return true
        default: throw .invalidForm([name], code: "BASE_TYPE_BOOLEAN", message: "Must be either true or false.")
        }
    }
}
