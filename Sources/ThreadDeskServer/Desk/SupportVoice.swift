import DiscordREST
import Logging
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// How ThreadDesk speaks as support: through a webhook of the thread's forum, under the name of the agent
/// who asked (or the team's). The bot's own posts are the app user's words, so anything support
/// says must come from someone else; the mirror takes any author but the bot for support.
final class SupportVoice: Sendable {
    private let discord: DiscordClient<AnyClock>
    private let locks: any JobLocks
    private let settings: DeskSettings
    /// Each forum's app's assistant name, by the forum's id: nobody else speaks under it.
    private let assistantNames: [String: AssistantName]
    private let logger: Logger
    /// Each forum's, by the forum's id.
    private let webhooks = Mutex<[String: DiscordWebhook]>([:])
    /// What the webhook is called in the forum's integrations.
    static let webhookName = "ThreadDesk"

    init(discord: DiscordClient<AnyClock>, locks: any JobLocks, settings: DeskSettings, assistantNames: [String: AssistantName] = [:], logger: Logger) {
        (self.discord, self.locks, self.settings, self.assistantNames, self.logger) = (discord, locks, settings, assistantNames, logger)
    }

    /// Whether `name` is the assistant's in `forum`: an agent of that name is refused before
    /// anything is posted (`say` would post under the team's name instead).
    func isReserved(_ name: String, in forum: String) -> Bool {
        assistantNames[forum]?.matches(name) == true
    }

    /// Posts `text` into `thread` of `forum` as support, named `speaker` (an agent) or the team;
    /// never under the assistant's name, which would make it pass for an automatic answer.
    func say(_ text: String, in thread: String, of forum: String, as speaker: String?) async throws -> DiscordMessage {
        try await post(DiscordWebhookMessage(content: text, username: settings.speakerName(speaker, reserved: assistantNames[forum])), in: thread, of: forum)
    }

    /// Posts an automatic answer into `thread` of `forum` under the app's assistant name: the
    /// mirror takes it for the assistant's (`MessageAuthor.assistant`), wherever it reads it from.
    /// - Throws: `NoAssistant` for a forum of no app; Discord's errors.
    func answer(_ text: String, in thread: String, of forum: String) async throws -> DiscordMessage {
        guard let name = assistantNames[forum] else { throw NoAssistant() }
        return try await post(DiscordWebhookMessage(content: text, username: name.name), in: thread, of: forum)
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

    struct NoAssistant: Error, CustomStringConvertible {
        var description: String { "the forum is no app's: it has no assistant name" }
    }

    struct WebhookBusy: Error, CustomStringConvertible {
        var description: String { "another replica is setting up the forum's webhook; try again" }
    }
}
