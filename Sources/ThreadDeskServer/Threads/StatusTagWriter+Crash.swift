import DiscordREST
import Foundation
import Logging
import Synchronization
import ThreadDeskStore

/// The crash tag: a thread whose user's app crashed shows it beside its status, until an agent
/// takes it off. Made in the forum the first time a thread needs it (a forum of an app that never
/// crashes never gets it); kept among the agent's tags by every status change after (the plan keeps
/// every tag that is not a status's).
extension StatusTagWriter {
    /// The crash tag's id in the forum, adding it when missing (matched by name, any case).
    /// - Throws: Discord's refusal, or `TagsMissing` when the forum did not keep it.
    func crashTagID(forum forumChannelID: String) async throws -> String {
        if let known = crashIDs.withLock({ $0[forumChannelID] }) { return known }
        let name = names.crash.lowercased()
        var forum = try await discord.channel(forumChannelID)
        if !(forum.availableTags ?? []).contains(where: { $0.name.lowercased() == name }) {
            let kept = (forum.availableTags ?? []).map { DiscordForumTagEdit(id: $0.id, name: $0.name, moderated: $0.moderated ?? false) }
            forum = try await discord.modifyForumTags(forumChannelID, kept + [DiscordForumTagEdit(name: names.crash)])
            logger.notice("Added the crash tag to the forum", metadata: ["forum": "\(forumChannelID)", "tag": "\(names.crash)"])
        }
        guard let id = forum.availableTags?.first(where: { $0.name.lowercased() == name })?.id else { throw StatusTags.TagsMissing() }
        crashIDs.withLock { $0[forumChannelID] = id }
        return id
    }

    /// Puts `tag` on `thread` unless it shows it already, within Discord's 5 (an agent's oldest
    /// tag gives way, never a status's). The caller holds the thread's job lock. The note then says
    /// nothing of what the thread shows: the next status change reads it first.
    func add(_ tag: String, to thread: Snowflake, statusIDs: Set<String>) async throws {
        let raw = try await store.globalValue(StatusTags.key(thread))
        guard raw != StatusTags.erasedNote, !isForgotten(thread) else { return }
        let channel = try await discord.channel(thread.description)
        var tags = channel.appliedTags ?? []
        guard !tags.contains(tag) else { return }
        if tags.count >= 5, let giving = tags.firstIndex(where: { !statusIDs.contains($0) }) { tags.remove(at: giving) }
        tags.append(tag)
        if channel.threadMetadata?.archived == true {
            // An archived thread changes only together with `archived: false`; back into the archive after.
            _ = try await discord.modifyThread(thread.description, archived: false, appliedTags: tags)
            _ = try await discord.modifyThread(thread.description, archived: true)
        } else {
            _ = try await discord.modifyThread(thread.description, appliedTags: tags)
        }
        await distrust(thread)
    }
}
