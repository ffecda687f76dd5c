import DiscordREST
import Logging
import Synchronization
import ThreadDeskStore

/// How ThreadDesk speaks as support: through a webhook of the thread's forum, under the name of the agent
/// who asked (or the team's). The bot's own posts are the app user's words, so anything support
/// says must come from someone else; the mirror takes any author but the bot for support.
final class SupportVoice: Sendable {
    private let discord: DiscordClient<AnyClock>
    private let locks: any JobLocks
    private let settings: DeskSettings
    private let logger: Logger
    /// Each forum's, by the forum's id.
    private let webhooks = Mutex<[String: DiscordWebhook]>([:])
    /// What the webhook is called in the forum's integrations.
    static let webhookName = "ThreadDesk"

    init(discord: DiscordClient<AnyClock>, locks: any JobLocks, settings: DeskSettings, logger: Logger) {
        (self.discord, self.locks, self.settings, self.logger) = (discord, locks, settings, logger)
    }

    /// Posts `text` into `thread` of `forum` as support, named `speaker` (an agent) or the team.
    func say(_ text: String, in thread: String, of forum: String, as speaker: String?) async throws -> DiscordMessage {
        try await post(DiscordWebhookMessage(content: text, username: settings.speakerName(speaker)), in: thread, of: forum)
    }

    /// Posts `text` as the assistant, under the app's reserved name (which the mirror reads as
    /// the author `assistant`, and which no agent may speak under).
    func say(_ text: String, in thread: String, of forum: String, asAssistant name: String) async throws -> DiscordMessage {
        try await post(DiscordWebhookMessage(content: text, username: name), in: thread, of: forum)
    }

    private func post(_ message: DiscordWebhookMessage, in thread: String, of forum: String) async throws -> DiscordMessage {
        let hook = try await currentWebhook(of: forum)
        do {
            return try await discord.executeWebhook(hook, threadID: thread, message)
        } catch .api(let error) where error.code == .unknownWebhook || error.code == .invalidWebhookToken {
            // Someone deleted it in the forum's settings: make another, once.
            logger.notice("The forum's ThreadDesk webhook is gone; making a new one")
            webhooks.withLock { if $0[forum]?.id == hook.id { $0[forum] = nil } }
            return try await discord.executeWebhook(try await currentWebhook(of: forum), threadID: thread, message)
        } catch {
            throw error
        }
    }

    /// The forum's webhook made by this bot's application, made when there is none. Looked up
    /// once a process; made under a job lock so that replicas starting together make one.
    private func currentWebhook(of forum: String) async throws -> DiscordWebhook {
        if let known = webhooks.withLock({ $0[forum] }) { return known }
        let application = try await discord.currentApplication().id
        // One lock for every forum (the name from before there were several): replicas of either
        // version, starting together, make one webhook per forum.
        let found: DiscordWebhook? = try await locks.exclusively("desk-webhook") {
            let existing = try await discord.webhooks(in: forum).first {
                $0.applicationId == application && $0.token != nil && $0.type == 1
            }
            if let existing { return existing }
            logger.notice("Making the forum's webhook, through which ThreadDesk speaks as support", metadata: ["forum": "\(forum)"])
            return try await discord.createWebhook(in: forum, name: Self.webhookName)
        }
        guard let found else { throw WebhookBusy() }
        webhooks.withLock { $0[forum] = found }
        return found
    }

    struct WebhookBusy: Error, CustomStringConvertible {
        var description: String { "another replica is setting up the forum's webhook; try again" }
    }
}
