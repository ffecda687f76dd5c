import DiscordREST
import Foundation
import Synchronization

/// Incoming webhooks: made by the bot on a text or forum channel, executed with their token.
extension DiscordWorld {
    /// Discord: at most 15 webhooks per channel.
    static let webhooksPerChannel = 15

    func createWebhook(in channelID: Snowflake, name: String) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let channel = state.channels[channelID] else { throw .unknownChannel }
            guard channel.type == .guildText || channel.type == .guildForum else { throw .wrongChannelType }
            guard state.webhooks.values.count(where: { $0.channelID == channelID }) < Self.webhooksPerChannel else {
                throw .tooManyWebhooks
            }
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let webhook = EmulatedWebhook(
                id: ids.next(), channelID: channelID, name: name,
                token: String((0..<68).map { _ in alphabet.randomElement()! }), applicationID: applicationID)
            state.webhooks[webhook.id] = webhook
            announceWebhooks(of: channelID, state: &state)
            return webhook.json(guildID: guild(of: state.channels[webhook.channelID]), creator: bot.json)
        }
    }

    func webhooks(in channelID: Snowflake) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            return .array(
                state.webhooks.values.filter { $0.channelID == channelID }.sorted { $0.id < $1.id }
                    .map { $0.json(guildID: guild(of: state.channels[channelID]), creator: bot.json) })
        }
    }

    func webhook(_ id: Snowflake) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let webhook = state.webhooks[id] else { throw .unknownWebhook }
            return webhook.json(guildID: guild(of: state.channels[webhook.channelID]), creator: bot.json)
        }
    }

    func deleteWebhook(_ id: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard let webhook = state.webhooks.removeValue(forKey: id) else { throw .unknownWebhook }
            announceWebhooks(of: webhook.channelID, state: &state)
        }
    }

    /// Where an execution goes: the webhook's channel, one of its threads, or a new forum post.
    enum WebhookTarget: Sendable {
        case channel
        case thread(Snowflake)
        case newPost(name: String, appliedTags: [Snowflake])
    }

    /// `POST /webhooks/{id}/{token}`: a message authored by the webhook under `username` (or its
    /// own name), through the same path as every post (an archived thread reopens, a locked one
    /// refuses). A forum's webhook must name a thread of that forum, or a new post.
    func executeWebhook(
        _ id: Snowflake, token: String, _ message: NewMessage, username: String?, target: WebhookTarget
    ) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let webhook = state.webhooks[id] else { throw .unknownWebhook }
            guard webhook.token == token else { throw .invalidWebhookToken }
            guard let channel = state.channels[webhook.channelID] else { throw .unknownChannel }
            // Only an application's webhooks send interactive components (a user's webhook has none to answer them).
            if !message.components.isEmpty, webhook.applicationID == nil {
                throw .invalidForm(["components"], code: "COMPONENT_INVALID", message: "Only application-owned webhooks can send components.")
            }
            var message = message
            message.origin = MessageOrigin(
                webhookID: webhook.id, webhookName: username ?? webhook.name, applicationID: webhook.applicationID)
            let posted: EmulatedMessage
            switch target {
            case .channel:
                guard channel.type != .guildForum else { throw .forumWebhookNeedsThread }
                posted = try postMessage(message, to: channel.id, author: webhook.id, type: 0, state: &state).message
            case .thread(let threadID):
                guard let thread = state.channels[threadID], thread.isThread, thread.parentID == channel.id else {
                    throw .unknownChannel
                }
                posted = try postMessage(message, to: threadID, author: webhook.id, type: 0, state: &state).message
            case .newPost(let name, let tags):
                guard channel.type == .guildForum else { throw .webhookThreadNameOutsideForum }
                let thread = try startForumThread(
                    in: channel.id, name: name, autoArchiveDuration: 4320, appliedTags: tags, message: message,
                    author: webhook.id, state: &state)
                state.counters.webhookExecutions += 1
                return thread["message"] ?? .null
            }
            state.counters.webhookExecutions += 1
            return json(posted, in: state, withNonce: true)
        }
    }

    /// WEBHOOKS_UPDATE, to the sessions with GUILD_WEBHOOKS.
    private func announceWebhooks(of channelID: Snowflake, state: inout State) {
        state.gateway.dispatch(
            "WEBHOOKS_UPDATE",
            ["guild_id": .string(guild(of: state.channels[channelID]).description), "channel_id": .string(channelID.description)],
            intent: .guildWebhooks, author: nil)
    }
}
