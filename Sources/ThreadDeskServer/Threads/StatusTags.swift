import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

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
///
/// This type is the queue and its loop; `StatusTagPlan` decides the edits, `StatusTagWriter`
/// makes them and keeps the note.
final class StatusTags: Service, Sendable, CustomStringConvertible {
    private let writer: StatusTagWriter
    private let store: any JobLocks & UserRecords & MirrorStore
    private let logger: Logger
    private let time: ServerTime
    /// The status each thread should show, not yet applied.
    private let desired = Mutex<[Snowflake: Desired]>([:])
    /// Threads to show the crash tag, not yet applied.
    private let crashed = Mutex<Set<Snowflake>>([])
    private let wakeUps = WakeSignal()

    /// A status to show, and whether the thread is to be archived (`/close`) or brought back
    /// (`/reopen`) with it; nil leaves that as it is.
    struct Desired: Sendable, Hashable {
        var status: ConversationStatus
        var archive: Bool?
    }

    /// How long a failed round waits before the next.
    static let retryAfter: Duration = .seconds(30)

    var description: String { "StatusTags" }

    init(
        names: StatusTagNames, discord: DiscordClient<AnyClock>, store: any GlobalValues & JobLocks & UserRecords & MirrorStore,
        feed: FeedState?, catalog: AppCatalog, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked
    ) {
        writer = StatusTagWriter(names: names, discord: discord, store: store, feed: feed, logger: logger)
        self.catalog = catalog
        (self.store, self.logger, self.time, self.work) = (store, logger, time, work)
        // The first round (the forum's tags) is due.
        work.raise(Self.workName)
    }

    /// Each app's forum has its own tags.
    private let catalog: AppCatalog

    /// Raised while a status waits to be applied or a round runs (the tests' settled signal).
    private let work: BackgroundWork
    static let workName = "status tags"

    /// The conversation in `thread` is now `status` (a message entered the mirror).
    func conversation(in thread: Snowflake, isNow status: ConversationStatus) {
        want(Desired(status: status), for: thread)
    }

    /// A crash report of the thread's user (of a group not ignored): the crash tag beside its status.
    func crashReported(in thread: Snowflake) {
        guard !writer.isForgotten(thread) else { return }
        crashed.withLock { crashed in
            crashed.insert(thread)
            work.raise(Self.workName)
        }
        wakeUps.signal()
    }

    /// `/close`: resolved, and archived in the same call.
    func close(_ thread: Snowflake) { want(Desired(status: .resolved, archive: true), for: thread) }

    /// `/reopen`: needs a reply, and out of the archive in the same call.
    func reopen(_ thread: Snowflake) { want(Desired(status: .needsReply, archive: false), for: thread) }

    /// A newer status wins; a pending archive or unarchive (`/close`, `/reopen`) stays with it,
    /// unless the user wrote since (their message brings the thread back).
    private func want(_ next: Desired, for thread: Snowflake) {
        guard !writer.isForgotten(thread) else { return }
        desired.withLock { desired in
            var merged = next
            if merged.archive == nil, next.status != .needsReply { merged.archive = desired[thread]?.archive }
            desired[thread] = merged
            work.raise(Self.workName)
        }
        wakeUps.signal()
    }

    /// The thread's user was erased: nothing more is applied to it, and no note of its status is
    /// kept (one being applied now is removed once it is written).
    func forget(_ thread: Snowflake) {
        writer.forget(thread)
        desired.withLock { $0[thread] = nil }
        crashed.withLock { _ = $0.remove(thread) }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.work.raise(Self.workName)
                let done = await self.round()
                // Settled unless a status or a crash came meanwhile; one left to retry waits for its time.
                self.desired.withLock { desired in
                    if !done || (desired.isEmpty && self.crashed.withLock({ $0.isEmpty })) { self.work.lower(Self.workName) }
                }
                // Idle until something changes; after a failure, again in a while.
                if done { _ = await self.wakeUps.wait() } else { _ = await self.wakeUps.wait(upTo: Self.retryAfter, on: self.time.clock) }
            }
        }
    }

    /// Makes sure of every forum's tags, then applies every status waiting. False when something is
    /// left for the next round (Discord refused or did not answer).
    func round() async -> Bool {
        // Each forum on its own: one app's forum Discord refuses leaves the others' tags going.
        var forumTags: [String: [ConversationStatus: String]] = [:]
        var done = true
        for forum in catalog.forums.sorted() {
            do {
                forumTags[forum] = try await writer.tagIDs(forum: forum)
            } catch {
                logger.warning("Could not set up the forum's status tags; trying again", metadata: ["forum": "\(forum)", "error": "\(error)"])
                done = false
            }
        }
        let pending = desired.withLock { desired in
            defer { desired.removeAll() }
            return desired
        }
        for (thread, next) in pending.sorted(by: { $0.key < $1.key }) {
            do {
                // The tags of the forum of the thread's app; a forum whose tags are not set up yet
                // keeps its threads' statuses for the next round.
                let forum = try await forum(of: thread)
                guard let ids = forumTags[forum] else {
                    desired.withLock { if $0[thread] == nil { $0[thread] = next } }
                    continue
                }
                // One replica at a time per thread: the store's note and Discord stay in step. An
                // erasure waiting for the thread here goes on once the lock is let go.
                defer { Self.threadLocks.released() }
                let applied: Void? = try await store.exclusively(Self.key(thread)) {
                    do {
                        try await Deadline.within(.seconds(30)) { try await self.writer.apply(next, to: thread, ids: ids) }
                    } catch {
                        // What the note says may be why (Discord refused a change made from it) or
                        // may be behind (an event heard during the attempt): the retry reads the
                        // thread first. Under the thread's lock, so no other replica's newer note
                        // is overwritten.
                        await self.writer.distrust(thread)
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
                    writer.forgetTagIDs()
                }
                logger.notice("Could not set a thread's status tag; trying again", metadata: ["thread": "\(thread)", "error": "\(error)"])
                // A newer status that came meanwhile wins over this one.
                desired.withLock { if $0[thread] == nil { $0[thread] = next } }
                done = false
            }
        }
        return await tagCrashes(forumTags) && done
    }

    /// The crash tag on every thread waiting for it; false when one is left for the next round.
    private func tagCrashes(_ forumTags: [String: [ConversationStatus: String]]) async -> Bool {
        let pending = crashed.withLock { crashed in
            defer { crashed.removeAll() }
            return crashed
        }
        var done = true
        for thread in pending.sorted() {
            do {
                let forum = try await forum(of: thread)
                guard forumTags[forum] != nil else {
                    crashed.withLock { _ = $0.insert(thread) }
                    continue
                }
                let tag = try await writer.crashTagID(forum: forum)
                defer { Self.threadLocks.released() }
                let applied: Void? = try await store.exclusively(Self.key(thread)) {
                    try await Deadline.within(.seconds(30)) { try await self.writer.add(tag, to: thread) }
                }
                if applied == nil { throw Busy() }
            } catch DiscordError.api(let refusal) where refusal.code == .unknownChannel {
                continue
            } catch is StatusTagWriter.CrashTagUnavailable {
                continue
            } catch {
                if case DiscordError.api(let refusal) = error, refusal.code == .invalidFormBody { writer.forgetTagIDs() }
                logger.notice("Could not put the crash tag on a thread; trying again", metadata: ["thread": "\(thread)", "error": "\(error)"])
                crashed.withLock { _ = $0.insert(thread) }
                done = false
            }
        }
        return done
    }

    /// The ids of the three tags in the first app's forum, adding to it those it lacks.
    /// - Throws: Discord's refusal, or `TagsMissing`.
    func tagIDs() async throws -> [ConversationStatus: String] { try await writer.tagIDs(forum: catalog.apps[0].forumChannelID) }

    /// The forum of the app whose user's thread `thread` is; the first app's for a thread whose
    /// owner the store does not know (a thread just made: as before there were several apps).
    private func forum(of thread: Snowflake) async throws -> String {
        let owner: UserID?
        if let recorded = try await store.userID(forThread: thread.description) { owner = recorded } else { owner = try await store.mirrorThread(thread)?.owner }
        return (owner.flatMap(catalog.app(of:)) ?? catalog.apps[0]).forumChannelID
    }

    /// The gateway says what a forum thread shows now; see `StatusTagWriter.heard`.
    /// - Throws: The store's errors (the caller records a gap in the feed).
    func heard(_ thread: Snowflake, archived: Bool, appliedTags: [String]?) async throws {
        try await writer.heard(thread, archived: archived, appliedTags: appliedTags)
    }

    /// A thread just made, with `tags`: its first status then needs no read of it.
    func started(_ thread: Snowflake, tags: [String]) async { await writer.started(thread, tags: tags) }

    /// The thread's note goes (its user was erased).
    /// - Throws: The store's errors.
    func dropNote(_ thread: Snowflake) async throws { try await writer.dropNote(thread) }

    /// The thread is read from Discord before its next change.
    func distrust(_ thread: Snowflake) async { await writer.distrust(thread) }

    struct Busy: Error, CustomStringConvertible {
        var description: String { "another replica is setting this thread's status" }
    }

    struct TagsMissing: Error, CustomStringConvertible {
        var description: String { "the forum did not keep the status tags" }
    }

    /// The store's note of the status a thread shows (so a status shown already costs no call,
    /// on any replica).
    static func key(_ thread: Snowflake) -> String { "thread-status/\(thread)" }

    /// What support reads when a closed conversation comes back.
    static let reopenedNote = ":ninja: Reopened: the user wrote again."
}

extension StatusTags: MirrorListener {
    /// Who spoke last among the messages the user sees for the first time: the thread's status.
    /// An automatic answer answers for nobody: the thread still needs a person's reply.
    func mirrorTookIn(_ intake: MirrorIntake) {
        guard let newest = intake.newestShown else { return }
        switch newest.author {
        case .user, .assistant: conversation(in: intake.thread, isNow: .needsReply)
        case .support: conversation(in: intake.thread, isNow: .waitingOnUser)
        }
    }
}
