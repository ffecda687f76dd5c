import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskStore

/// The names of the status tags (`STATUS_TAGS`).
public struct StatusTagNames: Sendable, Hashable {
    public var needsReply = "needs reply"
    public var waitingOnUser = "waiting on user"
    public var resolved = "resolved"

    public init() {}

    /// Three different names of 1–20 characters (Discord's limit for a tag), comma separated.
    init?(list: String) {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard names.count == 3, Set(names.map { $0.lowercased() }).count == 3, names.allSatisfy({ (1...20).contains($0.count) }) else {
            return nil
        }
        (needsReply, waitingOnUser, resolved) = (names[0], names[1], names[2])
    }

    func name(of status: ConversationStatus) -> String {
        switch status {
        case .needsReply: needsReply
        case .waitingOnUser: waitingOnUser
        case .resolved: resolved
        }
    }
}

/// Where a conversation stands, as the forum's list shows it.
enum ConversationStatus: String, Sendable, CaseIterable {
    /// The user wrote last.
    case needsReply = "needs-reply"
    /// Support answered last.
    case waitingOnUser = "waiting-on-user"
    /// Closed by an agent.
    case resolved
}

/// Keeps each ThreadDesk thread's status tag in step with its conversation. At start it makes
/// sure the forum has the three tags (adding only those missing, never touching others). A
/// change of status is one PATCH of the thread's tags, made in the background and coalesced:
/// none when the status is unchanged, one per thread however many messages came meanwhile. The
/// thread's other tags (an agent's) are kept, up to Discord's 5. Asleep while nothing changes.
///
/// What a thread shows (its tags, archived or not) is noted in the store with each change, as of
/// the feed's epoch, so the next change is one PATCH without a GET first. The gateway's
/// THREAD_UPDATE checks the note: the echo of our own change agrees with it; anything else (an
/// agent's tags, a status set by hand, an archive) makes it say nothing more of the thread, which
/// is then read from Discord before the next change. After a gap in the feed, or without one,
/// the note is not trusted either. (Events are not adopted as the new state: they may arrive out
/// of order, through several replicas; a disagreement only ever costs a GET.)
final class StatusTags: Service, Sendable, CustomStringConvertible {
    private let names: StatusTagNames
    private let discord: DiscordClient<AnyClock>
    private let store: any GlobalValues & JobLocks & UserRecords & MirrorStore
    /// The gateway feed, whose epoch says whether a note of the thread's tags can be trusted.
    private let feed: FeedState?
    private let forumChannelID: String
    private let logger: Logger
    private let time: ServerTime
    /// The tags' ids, once the forum has them.
    private let ids = Mutex<[ConversationStatus: String]?>(nil)
    /// The status each thread should show, not yet applied.
    private let desired = Mutex<[Snowflake: Desired]>([:])

    /// A status to show, and whether the thread is to be archived (`/close`) or brought back
    /// (`/reopen`) with it; nil leaves that as it is.
    struct Desired: Sendable, Hashable {
        var status: ConversationStatus
        var archive: Bool?
    }
    private let wakeUps = WakeSignal()
    /// How long a failed round waits before the next.
    static let retryAfter: Duration = .seconds(30)

    var description: String { "StatusTags" }

    init(
        names: StatusTagNames, discord: DiscordClient<AnyClock>, store: any GlobalValues & JobLocks & UserRecords & MirrorStore, feed: FeedState?,
        forumChannelID: String, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked
    ) {
        (self.names, self.discord, self.store, self.feed, self.forumChannelID, self.logger, self.time) =
            (names, discord, store, feed, forumChannelID, logger, time)
        self.work = work  // BackgroundWork (settled signal)
        work.raise(Self.workName)  // BackgroundWork (settled signal): the first round (the forum's tags) is due
    }

    // BackgroundWork (settled signal): raised while a status waits to be applied or a round runs.
    private let work: BackgroundWork
    static let workName = "status tags"

    /// The conversation in `thread` is now `status` (a message entered the mirror).
    func conversation(in thread: Snowflake, isNow status: ConversationStatus) {
        want(Desired(status: status), for: thread)
    }

    /// `/close`: resolved, and archived in the same call.
    func close(_ thread: Snowflake) { want(Desired(status: .resolved, archive: true), for: thread) }

    /// `/reopen`: needs a reply, and out of the archive in the same call.
    func reopen(_ thread: Snowflake) { want(Desired(status: .needsReply, archive: false), for: thread) }

    /// A newer status wins; a pending archive or unarchive (`/close`, `/reopen`) stays with it,
    /// unless the user wrote since (their message brings the thread back).
    private func want(_ next: Desired, for thread: Snowflake) {
        guard !forgotten.withLock({ $0.contains(thread) }) else { return }
        desired.withLock { desired in
            var merged = next
            if merged.archive == nil, next.status != .needsReply { merged.archive = desired[thread]?.archive }
            desired[thread] = merged
            work.raise(Self.workName)  // BackgroundWork (settled signal)
        }
        wakeUps.signal()
    }

    /// The thread's user was erased: nothing more is applied to it, and no note of its status is
    /// kept (one being applied now is removed once it is written).
    func forget(_ thread: Snowflake) {
        forgotten.withLock { _ = $0.insert(thread) }
        desired.withLock { $0[thread] = nil }
    }

    /// Threads of erased users (a few ids per erasure, for the life of the process).
    private let forgotten = Mutex<Set<Snowflake>>([])

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.work.raise(Self.workName)  // BackgroundWork (settled signal)
                let done = await self.round()
                // BackgroundWork (settled signal): settled unless a status came meanwhile; one left to retry waits for its time.
                self.desired.withLock { if !done || $0.isEmpty { self.work.lower(Self.workName) } }
                // Idle until something changes; after a failure, again in a while.
                if done { _ = await self.wakeUps.wait() } else { _ = await self.wakeUps.wait(upTo: Self.retryAfter, on: self.time.clock) }
            }
        }
    }

    /// Makes sure of the forum's tags, then applies every status waiting. False when something is
    /// left for the next round (Discord refused or did not answer).
    func round() async -> Bool {
        let ids: [ConversationStatus: String]
        do {
            ids = try await tagIDs()
        } catch {
            logger.warning("Could not set up the forum's status tags; trying again", metadata: ["error": "\(error)"])
            return false
        }
        let pending = desired.withLock { desired in
            defer { desired.removeAll() }
            return desired
        }
        var done = true
        for (thread, next) in pending.sorted(by: { $0.key < $1.key }) {
            do {
                // One replica at a time per thread: the store's note and Discord stay in step.
                let applied: Void? = try await store.exclusively(Self.key(thread)) {
                    do {
                        try await Deadline.within(.seconds(30)) { try await self.apply(next, to: thread, ids: ids) }
                    } catch {
                        // What the note says may be why (Discord refused a change made from it) or
                        // may be behind (an event heard during the attempt): the retry reads the
                        // thread first. Under the thread's lock, so no other replica's newer note
                        // is overwritten.
                        await self.distrust(thread)
                        throw error
                    }
                }
                if applied == nil { throw Busy() }
            } catch DiscordError.api(let refusal) where refusal.code == .unknownChannel {
                // The thread is gone: nothing to show there any more.
                continue
            } catch {
                if case DiscordError.api(let refusal) = error, refusal.code == .invalidFormBody {
                    // A status tag renamed or deleted in the forum's settings: look the tags up again.
                    self.ids.withLock { $0 = nil }
                }
                logger.notice("Could not set a thread's status tag; trying again", metadata: ["thread": "\(thread)", "error": "\(error)"])
                // A newer status that came meanwhile wins over this one.
                desired.withLock { if $0[thread] == nil { $0[thread] = next } }
                done = false
            }
        }
        return done
    }

    /// The ids of the three tags, adding to the forum those it lacks (matched by name, any case).
    func tagIDs() async throws -> [ConversationStatus: String] {
        if let known = ids.withLock({ $0 }) { return known }
        var forum = try await discord.channel(forumChannelID)
        let missing = ConversationStatus.allCases.filter { status in
            !(forum.availableTags ?? []).contains { $0.name.lowercased() == names.name(of: status).lowercased() }
        }
        if !missing.isEmpty {
            let kept = (forum.availableTags ?? []).map { DiscordForumTagEdit(id: $0.id, name: $0.name, moderated: $0.moderated ?? false) }
            forum = try await discord.modifyForumTags(forumChannelID, kept + missing.map { DiscordForumTagEdit(name: names.name(of: $0)) })
            logger.notice("Added the status tags to the forum", metadata: ["tags": "\(missing.map { names.name(of: $0) })"])
        }
        var found: [ConversationStatus: String] = [:]
        for status in ConversationStatus.allCases {
            found[status] = forum.availableTags?.first { $0.name.lowercased() == names.name(of: status).lowercased() }?.id
        }
        guard found.count == ConversationStatus.allCases.count else { throw TagsMissing() }
        ids.withLock { $0 = found }
        return found
    }

    struct Busy: Error, CustomStringConvertible {
        var description: String { "another replica is setting this thread's status" }
    }

    struct TagsMissing: Error, CustomStringConvertible {
        var description: String { "the forum did not keep the status tags" }
    }

    /// The store's note of the status a thread shows (so a status shown already costs no call,
    /// on any replica).
    static func key(_ thread: Snowflake) -> String { "thread-status/\(thread)" }

    /// The note while the thread's user is being erased; it goes with the erasure, after which
    /// the thread has no owner in the store.
    static let erasedNote = "erased"

    /// Marks `thread` as its user's erasure settles it: a change under way on any replica
    /// finishes first (the thread's lock), and none is made after. Waits `wait` at most.
    static func markErased(_ thread: Snowflake, in store: any GlobalValues & JobLocks, wait: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + wait
        while try await store.exclusively(key(thread), { try await store.setGlobalValue(key(thread), to: erasedNote) }) == nil {
            guard ContinuousClock.now < deadline else { throw Busy() }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Whether the store still knows whose thread it is (an erased user's threads are no one's).
    private func hasOwner(_ thread: Snowflake) async throws -> Bool {
        if try await store.userID(forThread: thread.description) != nil { return true }
        return try await store.mirrorThread(thread) != nil
    }

    private func apply(_ next: Desired, to thread: Snowflake, ids: [ConversationStatus: String]) async throws {
        // In flight before the note is read: what the gateway says from here on is checked below.
        watches.withLock { $0[thread, default: Watch()].heard = [] }
        defer {
            watches.withLock { watches in
                watches[thread]?.heard = nil
                if watches[thread]?.isIdle == true { watches[thread] = nil }
            }
        }
        let raw = try await store.globalValue(Self.key(thread))
        // Its user is being erased, or was (on any replica): nothing more is shown there.
        guard raw != Self.erasedNote, try await hasOwner(thread) else { return }
        var note = raw.flatMap(ShownNote.init(note:))
        // An event being checked, or heard since, that the note does not agree with: the note
        // says nothing more of the thread (and is written so, should this change not be made).
        let doubt = watches.withLock { watches in note.map { watches[thread]?.agree(with: $0) == false } ?? false }
        if doubt, var doubted = note, !doubted.unsure || doubted.shows != nil {
            doubted.forgetShows()
            try await store.setGlobalValue(Self.key(thread), to: doubted.note)
            note = doubted
        }
        let shown = note?.status
        if shown == next.status, note?.unsure != true, next.archive == nil { return }
        guard let tag = ids[next.status] else { return }
        let ours = Set(ids.values)
        // The feed's epoch before anything is read or written: a gap from here on makes the note
        // written below one to check again.
        let feedNow = try? await feed?.snapshot()
        let epoch = feedNow.flatMap { $0.live ? $0.epoch : nil }
        let current: (tags: [String], archived: Bool)
        if let note, let known = note.shows, let epoch, note.epoch == epoch,
            watches.withLock({ $0[thread]?.agree(with: note) ?? true })
        {
            current = known
        } else {
            let channel = try await discord.channel(thread.description)
            current = (channel.appliedTags ?? [], channel.threadMetadata?.archived ?? false)
        }
        let others = current.tags.filter { !ours.contains($0) }
        let tags = Array(others.prefix(4)) + [tag]
        let changed: DiscordChannel
        if current.archived, next.archive != false, next.status != .needsReply {
            // Discord changes an archived thread only together with `archived: false`: out of the
            // archive with the new tag, then back in (an archived thread stays archived).
            _ = try await discord.modifyThread(thread.description, archived: false, appliedTags: tags)
            changed = try await discord.modifyThread(thread.description, archived: true)
        } else if current.archived, next.status == .needsReply {
            // The user wrote: the conversation is open again, whatever was pending.
            changed = try await discord.modifyThread(thread.description, archived: false, appliedTags: tags)
        } else {
            changed = try await discord.modifyThread(thread.description, archived: next.archive, appliedTags: tags)
        }
        var written = ShownNote(
            status: next.status, epoch: epoch,
            shows: (changed.appliedTags ?? tags, changed.threadMetadata?.archived ?? (next.archive ?? current.archived)))
        // The gateway may speak of the thread meanwhile (even while the note is being written):
        // anything but what the thread showed before this change (a late echo of the last one)
        // or what this change made leaves the note saying nothing of the thread. It stays in
        // flight until the note is written and nothing more came.
        let before = ShownNote(status: nil, epoch: epoch, shows: current)
        while true {
            let heard = watches.withLock { watches -> [Heard] in
                defer { watches[thread]?.heard = [] }
                return watches[thread]?.heard ?? []
            }
            if heard.contains(where: { !$0.agrees(with: written) && !$0.agrees(with: before) }) { written.forgetShows() }
            try await store.setGlobalValue(Self.key(thread), to: written.note)
            let settled = watches.withLock { watches in watches[thread]?.heard?.isEmpty ?? true }
            if settled { break }
        }
        if forgotten.withLock({ $0.contains(thread) }) {
            // Its user was erased while this was under way: the note goes too.
            try await store.setGlobalValue(Self.key(thread), to: nil)
            return
        }
        if shown == .resolved, next.status == .needsReply, next.archive == nil {
            // The user wrote again after `/close`: Discord brought the thread back with their post.
            do {
                _ = try await discord.createMessage(in: thread.description, .init(content: Self.reopenedNote))
            } catch {
                logger.notice("Could not note that a closed thread was reopened", metadata: ["thread": "\(thread)", "error": "\(error)"])
            }
        }
    }

    /// The gateway says what a forum thread shows now (THREAD_UPDATE: the echo of our own change,
    /// an agent's tags, an archive). A note of ours that says otherwise stops saying anything of
    /// the thread. Throws when the note could not be checked: the caller records a gap, after
    /// which no note is trusted.
    func heard(_ thread: Snowflake, archived: Bool, appliedTags: [String]?) async throws {
        guard !forgotten.withLock({ $0.contains(thread) }) else { return }
        let heard = Heard(tags: appliedTags, archived: archived)
        // A change of ours under way checks it against its own result; otherwise it is checked
        // here, and a change starting meanwhile trusts no note until it is.
        let check = watches.withLock { watches -> Int? in
            if watches[thread]?.heard != nil {
                watches[thread]?.heard?.append(heard)
                return nil
            }
            var watch = watches[thread, default: Watch()]
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
        guard let note = try await store.globalValue(Self.key(thread)).flatMap(ShownNote.init(note:)), !heard.agrees(with: note) else { return }
        var updated = note
        updated.forgetShows()
        guard updated != note else { return }
        try await store.setGlobalValue(Self.key(thread), to: updated.note)
    }

    /// A thread just made, with `tags`, not archived: noted as of the feed's epoch when the feed is
    /// live, so its first status is one PATCH. Best effort: without the note it is read first.
    func started(_ thread: Snowflake, tags: [String]) async {
        do {
            guard let snapshot = try await feed?.snapshot(), snapshot.live,
                try await store.globalValue(Self.key(thread)) == nil
            else { return }
            let note = ShownNote(status: nil, epoch: snapshot.epoch, shows: (tags, false))
            try await store.setGlobalValue(Self.key(thread), to: note.note)
        } catch {
            logger.notice("Could not note a new thread's tags", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }

    /// The thread's note goes (its user was erased).
    func dropNote(_ thread: Snowflake) async throws {
        try await store.setGlobalValue(Self.key(thread), to: nil)
    }

    /// The thread is read from Discord before its next change, and no status is taken as shown.
    func distrust(_ thread: Snowflake) async {
        do {
            guard var note = try await store.globalValue(Self.key(thread)).flatMap(ShownNote.init(note:)) else { return }
            note.forgetShows()
            try await store.setGlobalValue(Self.key(thread), to: note.note)
        } catch {
            // Unreadable now: the next attempt's own failure comes back here.
            logger.notice("Could not set aside a thread's note", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }

    /// Threads whose change is under way in this process, with what the gateway said of each
    /// meanwhile.
    private let watches = Mutex<[Snowflake: Watch]>([:])

    /// A thread's events and changes in this process: whether a change of ours is under way (and
    /// what the gateway said meanwhile), and how many events are being checked against its note.
    struct Watch {
        var heard: [Heard]?
        /// Events being checked against the note now, by number.
        var checking: [Int: Heard] = [:]
        var nextCheck = 0
        var isIdle: Bool { heard == nil && checking.isEmpty }

        /// Whether every event heard or being checked agrees with `note`.
        func agree(with note: ShownNote) -> Bool {
            ((heard ?? []) + checking.values).allSatisfy { $0.agrees(with: note) }
        }
    }

    /// What a THREAD_UPDATE said of a thread.
    struct Heard: Sendable {
        /// Nil when the event did not carry them (a daemon older than the field).
        var tags: [String]?
        var archived: Bool

        /// Whether the note says just this of the thread. A note that says nothing of the tags
        /// agrees only when it claims no status as surely shown either (else an agent's status
        /// set by hand would be taken as ours).
        func agrees(with note: ShownNote) -> Bool {
            guard let shows = note.shows else { return note.unsure || note.status == nil }
            guard let tags else { return false }
            return Set(tags) == Set(shows.tags) && archived == shows.archived
        }
    }

    /// The store's note of a thread: the status we last gave it, whether that may no longer be
    /// what it shows (`unsure`: the gateway said something else, or a change failed), and, as of
    /// a feed epoch, its tags and whether it is archived. Written as `needs-reply;3;0;111,222`,
    /// `~resolved` when unsure (`needs-reply` alone in notes from earlier versions, which say
    /// nothing of the tags).
    struct ShownNote: Sendable, Equatable {
        var status: ConversationStatus?
        var unsure = false
        var epoch: Int?
        var shows: (tags: [String], archived: Bool)?

        init(status: ConversationStatus?, unsure: Bool = false, epoch: Int?, shows: (tags: [String], archived: Bool)?) {
            (self.status, self.unsure, self.epoch, self.shows) = (status, unsure, epoch, shows)
        }

        init?(note: String) {
            let parts = note.split(separator: ";", omittingEmptySubsequences: false)
            guard var first = parts.first, parts.count == 1 || parts.count == 4 else { return nil }
            if first.hasPrefix("~") {
                unsure = true
                first = first.dropFirst()
            }
            if first.isEmpty { status = nil } else if let status = ConversationStatus(rawValue: String(first)) { self.status = status } else { return nil }
            guard parts.count == 4 else { return }
            epoch = Int(parts[1])
            let tags = parts[3].split(separator: ",").map(String.init)
            if epoch != nil, parts[2] == "0" || parts[2] == "1", tags.allSatisfy({ Snowflake($0) != nil }) {
                shows = (tags, parts[2] == "1")
            }
        }

        var note: String {
            let status = (unsure ? "~" : "") + (self.status?.rawValue ?? "")
            guard let shows, let epoch else { return status }
            return "\(status);\(epoch);\(shows.archived ? 1 : 0);\(shows.tags.joined(separator: ","))"
        }

        /// Says nothing more of what the thread shows: its tags are read before the next change,
        /// which is made even if it is to the status we last gave it.
        mutating func forgetShows() {
            shows = nil
            unsure = true
        }

        static func == (a: Self, b: Self) -> Bool {
            a.status == b.status && a.unsure == b.unsure && a.epoch == b.epoch && a.shows?.tags == b.shows?.tags
                && a.shows?.archived == b.shows?.archived
        }
    }

    /// What support reads when a closed conversation comes back.
    static let reopenedNote = ":ninja: Reopened: the user wrote again."
}
