import DiscordREST
import Foundation
import Hummingbird

/// Incoming webhooks over REST, and `POST /webhooks/{id}/{token}` for both kinds of token: a
/// webhook's (execute) and an interaction's (a follow-up, when the id is the application's).
extension DiscordEmulator {
    func addWebhookRoutes(to router: Router<BasicRequestContext>) {
        let world = self.world
        let configuration = self.configuration

        rest(router, .post, "/channels/{channel_id}/webhooks", bucket: .route) { call throws(DiscordFailure) in
            let name = try Self.webhookName(call.body.object["name"], field: "name", required: true)
            return .ok(try world.createWebhook(in: try call.snowflake("channel_id"), name: name ?? ""))
        }

        rest(router, .get, "/channels/{channel_id}/webhooks", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.webhooks(in: try call.snowflake("channel_id")))
        }

        rest(router, .get, "/webhooks/{webhook_id}", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.webhook(try call.snowflake("webhook_id")))
        }

        rest(router, .delete, "/webhooks/{webhook_id}", bucket: .route) { call throws(DiscordFailure) in
            try world.deleteWebhook(try call.snowflake("webhook_id"))
            return .noContent
        }

        rest(router, .post, "/webhooks/{webhook_id}/{webhook_token}", bucket: .route, auth: .pathToken) {
            call throws(DiscordFailure) in
            let id = try call.snowflake("webhook_id")
            let token = call.parameters["webhook_token"] ?? ""
            let body = call.body.object
            let message = try InteractionCallback.message(
                body, files: call.body.files, path: [], ids: world.ids, maxFileSize: configuration.maxFileSize)
            if id == world.applicationID {
                // A follow-up answers with the message whatever `wait` says.
                return .ok(try world.followUp(token: token, message))
            }
            let username = try Self.webhookName(body["username"], field: "username", required: false)
            let threadID = try RESTPayloads.snowflake(call.query["thread_id"], field: "thread_id")
            let target: DiscordWorld.WebhookTarget
            if let threadName = body["thread_name"]?.stringValue {
                guard threadID == nil else { throw .forumWebhookThreadNameAndID }
                guard (1...100).contains(threadName.utf16.count) else {
                    throw .invalidForm(["thread_name"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
                }
                let tags = body["applied_tags"]?.arrayValue ?? []
                guard tags.count <= 5 else {
                    throw .invalidForm(["applied_tags"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 5 or fewer in length.")
                }
                target = .newPost(
                    name: threadName,
                    appliedTags: try tags.map { (value) throws(DiscordFailure) -> Snowflake in
                        try RESTPayloads.snowflake(json: value, field: "applied_tags")
                    })
            } else {
                target = threadID.map { .thread($0) } ?? .channel
            }
            let posted = try world.executeWebhook(id, token: token, message, username: username, target: target)
            return try Self.flag(call.query["wait"], name: "wait") ? .ok(posted) : .noContent
        }
    }

    /// A webhook's name (or a post's `username`): 1–80 characters, and never containing "clyde" or
    /// "discord", whatever the case, as Discord rules.
    static func webhookName(_ value: JSON?, field: String, required: Bool) throws(DiscordFailure) -> String? {
        guard let value, !value.isNull else {
            guard !required else { throw .invalidForm([field], code: "BASE_TYPE_REQUIRED", message: "This field is required") }
            return nil
        }
        guard let name = value.stringValue, (1...80).contains(name.count) else {
            throw .invalidForm([field], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 80 in length.")
        }
        for word in ["clyde", "discord"] where name.lowercased().contains(word) {
            throw .invalidForm([field], code: "USERNAME_INVALID_CONTAINS", message: "Username cannot contain \"\(word)\"")
        }
        return name
    }
}
