import Deadlines
import DiscordREST
import Foundation
import Logging
import Synchronization
import ThreadDeskStore

/// Makes a thread show a status: reads the store's note of what it shows (or the thread from
/// Discord when the note cannot be trusted), makes the plan's PATCHes, and writes the note again.
/// Also keeps the note honest as the gateway speaks of the thread (`heard`), and the forum's tag
/// ids. One thread at a time per replica is the caller's job (the thread's job lock).
final class StatusTagWriter: Sendable {
    let names: StatusTagNames
    let discord: DiscordClient<AnyClock>
    let store: any GlobalValues & JobLocks & UserRecords & MirrorStore
    /// The gateway feed, whose epoch says whether a note of the thread's tags can be trusted.
    private let feed: FeedState?
    let logger: Logger
    /// The tags' ids in each forum (each app's has its own), once the forum has them.
    private let ids = Mutex<[String: [ConversationStatus: String]]>([:])
    /// The crash tag's id in each forum that has it (`StatusTagWriter+Crash`).
    let crashIDs = Mutex<[String: String]>([:])
    /// Threads whose change is under way in this process, with what the gateway said of each meanwhile.
    private let watches = Mutex<[Snowflake: StatusTags.Watch]>([:])
    /// Threads of erased users (a few ids per erasure, for the life of the process).
    private let forgotten = Mutex<Set<Snowflake>>([])

    init(
        names: StatusTagNames, discord: DiscordClient<AnyClock>, store: any GlobalValues & JobLocks & UserRecords & MirrorStore,
        feed: FeedState?, logger: Logger
    ) {
        (self.names, self.discord, self.store, self.feed, self.logger) = (names, discord, store, feed, logger)
    }

    /// The thread's user was erased: nothing more is written of it.
    func forget(_ thread: Snowflake) { forgotten.withLock { _ = $0.insert(thread) } }
    func isForgotten(_ thread: Snowflake) -> Bool { forgotten.withLock { $0.contains(thread) } }

    /// Looks the tags up again on the next change (one was renamed or deleted in the forum).
    func forgetTagIDs() {
        ids.withLock { $0 = [:] }
        crashIDs.withLock { $0 = [:] }
    }

    /// The ids of the three tags, adding to the forum those it lacks (matched by name, any case).
    /// - Throws: Discord's refusal, or `TagsMissing` when the forum did not keep them.
    func tagIDs(forum forumChannelID: String) async throws -> [ConversationStatus: String] {
        if let known = ids.withLock({ $0[forumChannelID] }) { return known }
        var forum = try await discord.channel(forumChannelID)
        let missing = ConversationStatus.allCases.filter { status in
            !(forum.availableTags ?? []).contains { $0.name.lowercased() == names.name(of: status).lowercased() }
        }
        if !missing.isEmpty {
            let kept = (forum.availableTags ?? []).map { DiscordForumTagEdit(id: $0.id, name: $0.name, moderated: $0.moderated ?? false) }
            forum = try await discord.modifyForumTags(forumChannelID, kept + missing.map { DiscordForumTagEdit(name: names.name(of: $0)) })
            logger.notice("Added the status tags to the forum", metadata: ["forum": "\(forumChannelID)", "tags": "\(missing.map { names.name(of: $0) })"])
        }
        var found: [ConversationStatus: String] = [:]
        for status in ConversationStatus.allCases {
            found[status] = forum.availableTags?.first { $0.name.lowercased() == names.name(of: status).lowercased() }?.id
        }
        guard found.count == ConversationStatus.allCases.count else { throw StatusTags.TagsMissing() }
        ids.withLock { $0[forumChannelID] = found }
        return found
    }

    /// Makes `thread` show `next`. The caller holds the thread's job lock.
    /// - Throws: Discord's or the store's errors; the note may then be behind (the caller distrusts it).
    func apply(_ next: StatusTags.Desired, to thread: Snowflake, ids: [ConversationStatus: String]) async throws {
        // In flight before the note is read: what the gateway says from here on is checked below.
        watches.withLock { $0[thread, default: StatusTags.Watch()].heard = [] }
        defer {
            watches.withLock { watches in
                watches[thread]?.heard = nil
                if watches[thread]?.isIdle == true { watches[thread] = nil }
            }
        }
        let raw = try await store.globalValue(StatusTags.key(thread))
        // Its user is being erased, or was (on any replica): nothing more is shown there.
        guard raw != StatusTags.erasedNote, try await hasOwner(thread) else { return }
        var note = raw.flatMap(StatusTags.ShownNote.init(note:))
        // An event being checked, or heard since, that the note does not agree with: the note
        // says nothing more of the thread (and is written so, should this change not be made).
        let doubt = watches.withLock { watches in note.map { watches[thread]?.agree(with: $0) == false } ?? false }
        if doubt, var doubted = note, !doubted.unsure || doubted.shows != nil {
            doubted.forgetShows()
            try await store.setGlobalValue(StatusTags.key(thread), to: doubted.note)
            note = doubted
        }
        guard StatusTagPlan.isNeeded(next, note: note) else { return }
        // The feed's epoch before anything is read or written: a gap from here on makes the note
        // written below one to check again.
        let feedNow = try? await feed?.snapshot()
        let epoch = feedNow.flatMap { $0.live ? $0.epoch : nil }
        let current: (tags: [String], archived: Bool)
        if let note, let known = note.shows, let epoch, note.epoch == epoch, watches.withLock({ $0[thread]?.agree(with: note) ?? true }) {
            current = known
        } else {
            let channel = try await discord.channel(thread.description)
            current = (channel.appliedTags ?? [], channel.threadMetadata?.archived ?? false)
        }
        guard let plan = StatusTagPlan(next, showing: current, lastGiven: note?.status, ids: ids) else { return }
        var changed: DiscordChannel?
        for edit in plan.edits {
            changed = try await discord.modifyThread(thread.description, archived: edit.archived, appliedTags: edit.appliedTags)
        }
        var written = StatusTags.ShownNote(
            status: next.status, epoch: epoch, shows: (changed?.appliedTags ?? plan.tags, changed?.threadMetadata?.archived ?? plan.archived))
        // The gateway may speak of the thread meanwhile (even while the note is being written):
        // anything but what the thread showed before this change (a late echo of the last one)
        // or what this change made leaves the note saying nothing of the thread. It stays in
        // flight until the note is written and nothing more came.
        let before = StatusTags.ShownNote(status: nil, epoch: epoch, shows: current)
        while true {
            let heard = watches.withLock { watches -> [StatusTags.Heard] in
                defer { watches[thread]?.heard = [] }
                return watches[thread]?.heard ?? []
            }
            if heard.contains(where: { !$0.agrees(with: written) && !$0.agrees(with: before) }) { written.forgetShows() }
            try await store.setGlobalValue(StatusTags.key(thread), to: written.note)
            if watches.withLock({ $0[thread]?.heard?.isEmpty ?? true }) { break }
        }
        if isForgotten(thread) {
            // Its user was erased while this was under way: the note goes too.
            try await store.setGlobalValue(StatusTags.key(thread), to: nil)
            return
        }
        if plan.announcesReopening {
            do {
                _ = try await discord.createMessage(in: thread.description, .init(content: StatusTags.reopenedNote))
            } catch {
                logger.notice("Could not note that a closed thread was reopened", metadata: ["thread": "\(thread)", "error": "\(error)"])
            }
        }
    }

    /// Whether the store still knows whose thread it is (an erased user's threads are no one's).
    private func hasOwner(_ thread: Snowflake) async throws -> Bool {
        if try await store.userID(forThread: thread.description) != nil { return true }
        return try await store.mirrorThread(thread) != nil
    }

    /// The gateway says what a forum thread shows now (THREAD_UPDATE: the echo of our own change,
    /// an agent's tags, an archive). A note of ours that says otherwise stops saying anything of
    /// the thread.
    /// - Throws: The store's errors: the note could not be checked (the caller records a gap,
    ///   after which no note is trusted).
    func heard(_ thread: Snowflake, archived: Bool, appliedTags: [String]?) async throws {
        guard !isForgotten(thread) else { return }
        let heard = StatusTags.Heard(tags: appliedTags, archived: archived)
        // A change of ours under way checks it against its own result; otherwise it is checked
        // here, and a change starting meanwhile trusts no note until it is.
        let check = watches.withLock { watches -> Int? in
            if watches[thread]?.heard != nil {
                watches[thread]?.heard?.append(heard)
                return nil
            }
            var watch = watches[thread, default: StatusTags.Watch()]
            let number = watch.nextCheck
            watch.nextCheck += 1
            watch.checking[number] = heard
            watches[thread] = watch
            return number
        }
        guard let check else { return }
        defer {
            watches.withLock { watches in
                watches[thread]?.checking[check] = nil
                if watches[thread]?.isIdle == true { watches[thread] = nil }
            }
        }
        let key = StatusTags.key(thread)
        guard let note = try await store.globalValue(key).flatMap(StatusTags.ShownNote.init(note:)), !heard.agrees(with: note) else { return }
        var updated = note
        updated.forgetShows()
        guard updated != note else { return }
        try await store.setGlobalValue(key, to: updated.note)
    }

    /// A thread just made, with `tags`, not archived: noted as of the feed's epoch when the feed is
    /// live, so its first status is one PATCH. Best effort: without the note it is read first.
    func started(_ thread: Snowflake, tags: [String]) async {
        do {
            guard let snapshot = try await feed?.snapshot(), snapshot.live, try await store.globalValue(StatusTags.key(thread)) == nil else { return }
            let note = StatusTags.ShownNote(status: nil, epoch: snapshot.epoch, shows: (tags, false))
            try await store.setGlobalValue(StatusTags.key(thread), to: note.note)
        } catch {
            logger.notice("Could not note a new thread's tags", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }

    /// The thread's note goes (its user was erased).
    func dropNote(_ thread: Snowflake) async throws {
        try await store.setGlobalValue(StatusTags.key(thread), to: nil)
    }

    /// The thread is read from Discord before its next change, and no status is taken as shown.
    func distrust(_ thread: Snowflake) async {
        do {
            guard var note = try await store.globalValue(StatusTags.key(thread)).flatMap(StatusTags.ShownNote.init(note:)) else { return }
            note.forgetShows()
            try await store.setGlobalValue(StatusTags.key(thread), to: note.note)
        } catch {
            // Unreadable now: the next attempt's own failure comes back here.
            logger.notice("Could not set aside a thread's note", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }
}
