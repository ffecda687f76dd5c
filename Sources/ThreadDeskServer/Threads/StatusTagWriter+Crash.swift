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
        if let known = crashIDs.withLock({ $0[forumChannelID] }) {
            guard !known.isEmpty else { throw CrashTagUnavailable() }
            return known
        }
        let name = names.crash.lowercased()
        var forum = try await discord.channel(forumChannelID)
        if !(forum.availableTags ?? []).contains(where: { $0.name.lowercased() == name }) {
            let kept = (forum.availableTags ?? []).map { DiscordForumTagEdit(id: $0.id, name: $0.name, moderated: $0.moderated ?? false) }
            let edited: Result<DiscordChannel, DiscordError>
            do {
                edited = .success(try await discord.modifyForumTags(forumChannelID, kept + [DiscordForumTagEdit(name: names.crash)]))
            } catch {
                edited = .failure(error)
            }
            switch edited {
            case .success(let channel):
                forum = channel
            case .failure(.api(let refusal)) where refusal.status < 500 && refusal.status != 429:
                // The forum takes no more tags (Discord's 20), or not from the bot: said once, and
                // not asked again until the process restarts (each refusal counts toward Discord's ban).
                crashIDs.withLock { $0[forumChannelID] = "" }
                logger.warning(
                    "The forum refused the crash tag; threads with crashes are not tagged", metadata: ["forum": "\(forumChannelID)", "error": "\(refusal)"])
                throw CrashTagUnavailable()
            case .failure(let error):
                throw error
            }
            logger.notice("Added the crash tag to the forum", metadata: ["forum": "\(forumChannelID)", "tag": "\(names.crash)"])
        }
        guard let id = forum.availableTags?.first(where: { $0.name.lowercased() == name })?.id else { throw StatusTags.TagsMissing() }
        crashIDs.withLock { $0[forumChannelID] = id }
        return id
    }

    /// The forum refused the crash tag (see `crashTagID`).
    struct CrashTagUnavailable: Error, CustomStringConvertible {
        var description: String { "the forum has no crash tag and takes none" }
    }

    /// Puts `tag` on `thread` unless it shows it already; a thread with Discord's 5 tags already
    /// keeps them (the agents' own tags are theirs). The caller holds the thread's job lock. The
    /// note then says nothing of what the thread shows: the next status change reads it first.
    func add(_ tag: String, to thread: Snowflake) async throws {
        let raw = try await store.globalValue(StatusTags.key(thread))
        guard raw != StatusTags.erasedNote, !isForgotten(thread) else { return }
        let channel = try await discord.channel(thread.description)
        var tags = channel.appliedTags ?? []
        guard !tags.contains(tag), tags.count < 5 else { return }
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
