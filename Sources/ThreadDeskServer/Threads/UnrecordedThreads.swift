import DiscordREST
import ThreadDeskCore
import ThreadDeskStore

/// Finds the threads Discord has for a user that the store does not know: made by an attempt of
/// ours whose answer was lost (the process or the database gone meanwhile), or by the reference
/// system. The next send adopts one; an erasure settles them all.
struct UnrecordedThreads: Sendable {
    let store: any UserRecords & GlobalValues & MirrorStore
    let discord: DiscordClient<AnyClock>
    let bot: BotIdentity
    /// Each user's threads are in their app's forum.
    let catalog: AppCatalog

    /// A thread that may be the user's, with its starter post when it could be read.
    struct Candidate: Sendable {
        let thread: String
        let starter: DiscordMessage?
    }

    /// Active threads of the forum, started by the bot within the note's time, not locked,
    /// nobody else's, and started with the post the attempt noted (without a noted starter: named
    /// for the user), newest first.
    func candidates(for id: UserID, _ adoption: ThreadNotes.Adoption) async throws -> [Candidate] {
        guard let app = catalog.app(of: id) else { return [] }
        let bot = try await self.bot.id()
        let active = try await discord.activeThreads(guildID: app.guildID).threads
        let name = id.local.rawValue
        let matching = active.filter { thread in
            thread.parentId == app.forumChannelID && thread.ownerId == bot.description
                && (adoption.starter != nil || thread.name == name || thread.name?.hasPrefix(name + " · ") == true)
                && thread.threadMetadata?.locked != true
                && (Snowflake(thread.id).map { (adoption.madeAfter...adoption.madeBefore).contains($0.date) } ?? false)
        }
        var found: [Candidate] = []
        for thread in matching.sorted(by: { (Snowflake($0.id) ?? Snowflake(0)) > (Snowflake($1.id) ?? Snowflake(0)) }) {
            // Someone else's: recorded for them, or mirrored for them (a thread just made, its
            // record not yet committed).
            if let owner = try await store.userID(forThread: thread.id), owner != id { continue }
            let mirrored = try await store.mirrorThread(Snowflake(thread.id) ?? Snowflake(0))
            if mirrored?.gone == true || mirrored.map({ $0.owner != id }) == true { continue }
            // A forum thread's id is its starter message's id.
            let starter = try? await discord.message(thread.id, in: thread.id)
            if let noted = adoption.starter {
                guard let starter, starter.author.id == bot.description,
                    ThreadNotes.starterDigest(content: starter.content, fileSizes: starter.attachments.map(\.size)) == noted
                else { continue }
            }
            found.append(Candidate(thread: thread.id, starter: starter))
        }
        return found
    }

    /// The threads an attempt of ours noted for `id` may have made and the store never kept;
    /// none when there was no such attempt.
    func attempts(of id: UserID) async throws -> [String] {
        guard let note = try await store.globalValue(ThreadNotes.unrecordedThreadKey(id)), note.hasPrefix(ThreadNotes.attemptNotePrefix),
            let adoption = ThreadNotes.adoption(note, for: id, legacyRoutes: false)
        else { return [] }
        return try await candidates(for: id, adoption).map(\.thread)
    }
}
