import Foundation
import NIOHTTP1

/// The routes of the agent's desk: slash commands, answers to interactions, webhooks.
extension DiscordClient {
    /// The bot's application (its id names the commands' routes).
    public func currentApplication() async throws(DiscordError) -> DiscordApplication {
        try await send(
            Request(method: .GET, template: "/oauth2/applications/@me", path: "/oauth2/applications/@me", major: "", retriesServerErrors: true),
            as: DiscordApplication.self)
    }

    /// Replaces the guild's commands of the application with `commands` (one call, whatever
    /// changed; a command that keeps its name keeps its id).
    public func overwriteGuildCommands(applicationID: String, guildID: String, _ commands: [DiscordApplicationCommand])
        async throws(DiscordError)
    {
        try await send(
            Request(
                method: .PUT, template: "/applications/{application_id}/guilds/{guild_id}/commands",
                path: "/applications/\(try Self.id(applicationID))/guilds/\(try Self.id(guildID))/commands", major: guildID,
                body: try Self.body(commands, files: []), retriesServerErrors: true))
    }

    /// The names of the application's commands in the guild (to see whether someone removed them).
    public func guildCommandNames(applicationID: String, guildID: String) async throws(DiscordError) -> [String] {
        try await send(
            Request(
                method: .GET, template: "/applications/{application_id}/guilds/{guild_id}/commands",
                path: "/applications/\(try Self.id(applicationID))/guilds/\(try Self.id(guildID))/commands", major: guildID,
                retriesServerErrors: true),
            as: [DiscordNamed].self
        ).map(\.name)
    }

    /// Answers an interaction, once, within 3 s of it. Authorised by its token, not the bot's.
    public func respond(to interactionID: String, token: String, _ response: DiscordInteractionResponse) async throws(DiscordError) {
        try await send(
            Request(
                method: .POST, template: "/interactions/{interaction_id}/{interaction_token}/callback",
                path: "/interactions/\(try Self.id(interactionID))/\(try Self.token(token))/callback", major: interactionID,
                body: try Self.body(response, files: []), retriesServerErrors: false, usesBotToken: false))
    }

    /// Replaces the text of an interaction's answer (after a deferral: the answer itself), for up
    /// to 15 minutes after the interaction.
    public func editOriginalResponse(applicationID: String, token: String, content: String) async throws(DiscordError) {
        try await editOriginalResponse(applicationID: applicationID, token: token, DiscordMessageEdit(content: content))
    }

    /// Edits an interaction's answer, or after a deferred update (6) the message clicked: text,
    /// buttons, or both.
    public func editOriginalResponse(applicationID: String, token: String, _ edit: DiscordMessageEdit) async throws(DiscordError) {
        try await send(
            Request(
                method: .PATCH, template: "/webhooks/{application_id}/{interaction_token}/messages/@original",
                path: "/webhooks/\(try Self.id(applicationID))/\(try Self.token(token))/messages/@original", major: applicationID,
                body: try Self.body(edit, files: []), retriesServerErrors: true, usesBotToken: false))
    }

    /// A further message for an acknowledged interaction, for up to 15 minutes (ephemeral: only
    /// the member sees it). Mentions are off. Not retried on a server error: it may be there already.
    @discardableResult
    public func followUp(applicationID: String, token: String, _ content: String, ephemeral: Bool) async throws(DiscordError)
        -> DiscordMessage
    {
        try await send(
            Request(
                method: .POST, template: "/webhooks/{application_id}/{interaction_token}",
                path: "/webhooks/\(try Self.id(applicationID))/\(try Self.token(token))", major: applicationID,
                body: try Self.body(DiscordFollowUp(content: content, flags: ephemeral ? DiscordInteractionResponse.ephemeral : nil), files: []),
                retriesServerErrors: false, usesBotToken: false),
            as: DiscordMessage.self)
    }

    public func createWebhook(in channelID: String, name: String) async throws(DiscordError) -> DiscordWebhook {
        try await send(
            Request(
                method: .POST, template: "/channels/{channel_id}/webhooks", path: "/channels/\(try Self.id(channelID))/webhooks",
                major: channelID, body: try Self.body(DiscordWebhookCreate(name: name), files: []), retriesServerErrors: false),
            as: DiscordWebhook.self)
    }

    public func webhooks(in channelID: String) async throws(DiscordError) -> [DiscordWebhook] {
        try await send(
            Request(
                method: .GET, template: "/channels/{channel_id}/webhooks", path: "/channels/\(try Self.id(channelID))/webhooks",
                major: channelID, retriesServerErrors: true),
            as: [DiscordWebhook].self)
    }

    /// Posts through a webhook into `threadID` (a thread of the webhook's forum) and returns the
    /// message. Not retried on a server error: the message may be there already.
    public func executeWebhook(_ webhook: DiscordWebhook, threadID: String, _ message: DiscordWebhookMessage) async throws(DiscordError)
        -> DiscordMessage
    {
        guard let token = webhook.token else {
            throw .api(DiscordAPIError(status: 401, code: .general, message: "A webhook without its token cannot post", errors: nil))
        }
        return try await send(
            Request(
                method: .POST, template: "/webhooks/{webhook_id}/{webhook_token}",
                path: "/webhooks/\(try Self.id(webhook.id))/\(try Self.token(token))", major: webhook.id,
                query: [("wait", "true"), ("thread_id", try Self.id(threadID))], body: try Self.body(message, files: []),
                retriesServerErrors: false, usesBotToken: false),
            as: DiscordMessage.self)
    }

    /// Refuses a token that could leave its path segment.
    static func token(_ value: String) throws(DiscordError) -> String {
        guard !value.isEmpty, value.count <= 500, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .api(DiscordAPIError(status: 400, code: .invalidFormBody, message: "Not a token", errors: nil))
        }
        return value
    }
}

struct DiscordFollowUp: Encodable {
    var content: String
    var flags: Int?
    var allowedMentions = DiscordAllowedMentions.none

    private enum CodingKeys: String, CodingKey { case content, flags, allowedMentions = "allowed_mentions" }
}

/// Only the name of what Discord lists.
struct DiscordNamed: Decodable {
    var name: String
}
