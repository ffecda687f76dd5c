import DiscordREST
import Foundation

/// Turns dispatches into forum events. MESSAGE_CREATE carries no parent id, so the filter keeps a
/// thread → parent map from GUILD_CREATE and the THREAD_* events, and asks REST about a channel
/// it has never seen.
public actor ForumEventFilter {
    /// The support forums (one per app).
    public let forumIDs: Set<String>
    /// The FAQ forums (one per app that has one), whose posts are curated answers.
    public let faqForumIDs: Set<String>
    private let discord: DiscordClient<AnyClock>?
    private var parents: [String: String] = [:]
    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    /// Commands, autocomplete, button clicks and modal submits; never a PING (HTTP endpoints only).
    static let forwardedInteractions: Set<Int> = [
        DiscordInteraction.command, DiscordInteraction.component, DiscordInteraction.autocomplete, DiscordInteraction.modalSubmit,
    ]

    public init(forumID: String, faqForumID: String? = nil, discord: DiscordClient<AnyClock>?) {
        self.init(forumIDs: [forumID], faqForumIDs: faqForumID.map { [$0] } ?? [], discord: discord)
    }

    public init(forumIDs: Set<String>, faqForumIDs: Set<String> = [], discord: DiscordClient<AnyClock>?) {
        self.forumIDs = forumIDs
        self.faqForumIDs = faqForumIDs
        self.discord = discord
    }

    public func events(for type: String, data: JSON) async -> [ForumEvent] {
        switch type {
        case "GUILD_CREATE":
            for thread in (data["threads"]?.arrayValue ?? []) + (data["channels"]?.arrayValue ?? []) { remember(thread) }
            return []
        case "GUILD_ROLE_CREATE", "GUILD_ROLE_UPDATE", "GUILD_ROLE_DELETE":
            return faqForumIDs.isEmpty ? [] : [.faqAccessChanged]
        case "CHANNEL_UPDATE":
            guard data["id"]?.stringValue.map(faqForumIDs.contains) == true else { return [] }
            return [.faqAccessChanged]
        case "THREAD_LIST_SYNC":
            for thread in data["threads"]?.arrayValue ?? [] { remember(thread) }
            return []
        case "THREAD_CREATE":
            remember(data)
            return faqPost(data)
        case "THREAD_UPDATE":
            remember(data)
            if let post = faqPost(data).first { return [post] }
            guard data["parent_id"]?.stringValue.map(forumIDs.contains) == true, let id = data["id"]?.stringValue else { return [] }
            return [.threadUpdated(
                threadID: id, archived: data["thread_metadata"]?["archived"]?.boolValue ?? false,
                locked: data["thread_metadata"]?["locked"]?.boolValue ?? false,
                appliedTags: data["applied_tags"]?.arrayValue.map { $0.compactMap(\.stringValue) })]
        case "THREAD_DELETE":
            guard let id = data["id"]?.stringValue else { return [] }
            let parent = data["parent_id"]?.stringValue ?? parents[id]
            parents[id] = nil
            if parent.map(faqForumIDs.contains) == true { return [.faqPostDeleted(threadID: id)] }
            return parent.map(forumIDs.contains) == true ? [.threadDeleted(threadID: id)] : []
        case "MESSAGE_CREATE":
            guard let channel = data["channel_id"]?.stringValue else { return [] }
            if await isFAQStarter(data) {
                return (try? Self.decoder.decode(DiscordMessage.self, from: data.encoded())).map { [.faqStarter($0)] } ?? [.faqStarterChanged(threadID: channel)]
            }
            guard let inForum = await isInForum(channel) else {
                // Could not tell where it belongs: let the server's catch-up find it.
                return [.gap]
            }
            guard inForum, let message = try? Self.decoder.decode(DiscordMessage.self, from: data.encoded()) else { return [] }
            return [.messageCreated(message)]
        case "MESSAGE_UPDATE":
            if let channel = data["channel_id"]?.stringValue, await isFAQStarter(data) {
                return (try? Self.decoder.decode(DiscordMessage.self, from: data.encoded())).map { [.faqStarter($0)] } ?? [.faqStarterChanged(threadID: channel)]
            }
            guard let channel = data["channel_id"]?.stringValue, let id = data["id"]?.stringValue, await isInForum(channel) == true else { return [] }
            if let message = try? Self.decoder.decode(DiscordMessage.self, from: data.encoded()) { return [.messageUpdated(message)] }
            return [.messageChanged(channelID: channel, messageID: id)]
        case "MESSAGE_DELETE":
            // A post whose starter is gone answers nothing (Discord's client deletes the post with it).
            if await isFAQStarter(data), let channel = data["channel_id"]?.stringValue { return [.faqPostDeleted(threadID: channel)] }
            guard let channel = data["channel_id"]?.stringValue, let id = data["id"]?.stringValue, await isInForum(channel) == true else { return [] }
            return [.messageDeleted(channelID: channel, messageID: id)]
        case "TYPING_START":
            guard let channel = data["channel_id"]?.stringValue, let user = data["user_id"]?.stringValue,
                await isInForum(channel) == true
            else { return [] }
            return [.typing(channelID: channel, userID: user)]
        case "INTERACTION_CREATE":
            // Only ThreadDesk's own commands, buttons and modals come to its bot; where they were
            // used is the desk's to judge.
            guard let interaction = try? Self.decoder.decode(DiscordInteraction.self, from: data.encoded()),
                Self.forwardedInteractions.contains(interaction.type)
            else { return [] }
            return [.interaction(interaction)]
        case "MESSAGE_DELETE_BULK":
            guard let channel = data["channel_id"]?.stringValue, await isInForum(channel) == true else { return [] }
            let ids = (data["ids"]?.arrayValue ?? []).compactMap(\.stringValue)
            return ids.isEmpty ? [] : [.messagesDeleted(channelID: channel, messageIDs: ids)]
        default:
            return []
        }
    }

    /// A thread of the FAQ forum, as a post: archived posts stay answers.
    private func faqPost(_ thread: JSON) -> [ForumEvent] {
        guard thread["parent_id"]?.stringValue.map(faqForumIDs.contains) == true, let id = thread["id"]?.stringValue else { return [] }
        let tags = (thread["applied_tags"]?.arrayValue ?? []).compactMap(\.stringValue)
        return [.faqPost(threadID: id, title: thread["name"]?.stringValue ?? "", tagIDs: tags)]
    }

    /// A message that starts a FAQ post (a forum post's starter shares the thread's id); a thread
    /// not seen yet (an archived post) is looked up once.
    private func isFAQStarter(_ message: JSON) async -> Bool {
        guard !faqForumIDs.isEmpty, let channel = message["channel_id"]?.stringValue, message["id"]?.stringValue == channel else { return false }
        if parents[channel] == nil { _ = await isInForum(channel) }
        return parents[channel].map(faqForumIDs.contains) == true
    }

    private func remember(_ channel: JSON) {
        guard let id = channel["id"]?.stringValue else { return }
        parents[id] = channel["parent_id"]?.stringValue ?? ""
    }

    /// Whether `channel` is a thread of the support forum; unknown channels are looked up once.
    /// nil when Discord could not say.
    private func isInForum(_ channel: String) async -> Bool? {
        if let parent = parents[channel] { return forumIDs.contains(parent) }
        guard let discord else { return false }
        do {
            let fetched = try await discord.channel(channel)
            parents[channel] = fetched.parentId ?? ""
            return fetched.parentId.map(forumIDs.contains) == true
        } catch .api {
            parents[channel] = ""
            return false
        } catch {
            return nil
        }
    }

    /// Threads known so far (for tests).
    public var knownThreads: Int { parents.count }
}
