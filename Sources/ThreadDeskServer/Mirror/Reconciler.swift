import DiscordREST
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

/// Checks the mirror against Discord through REST, on one replica at a time:
/// - after a gap of the gateway feed, every active ThreadDesk thread of the forum (Discord lists
///   them in one call), then the feed's epoch counts as reconciled;
/// - on every run, threads whose newest message in Discord is newer than the mirror's;
/// - on the timer, every thread with activity in `MirrorSettings.reconcileWindow` — its newest
///   100 messages and anything newer — which catches edits and deletes a gap hid; with the feed
///   live, at `reconcileThreadsPerSecond`.
struct Reconciler: Sendable {
    let store: any UserStore
    let discord: DiscordClient<AnyClock>
    let feed: FeedState
    let sync: MirrorSync
    /// The apps: the active threads of each guild are listed (one call a guild), those of their forums kept.
    let catalog: AppCatalog
    let settings: MirrorSettings
    let metrics: ServerMetrics
    let logger: Logger
    /// The clock a periodic round's pace runs on.
    let time: ServerTime

    /// One reconciliation, unless another replica runs one; a failure is counted and logged (the
    /// next run retries).
    /// - Parameters:
    ///   - reason: Why it runs, for the log.
    ///   - periodic: Whether the timer started it (then recently active threads are read too).
    func run(reason: String, periodic: Bool) async {
        defer { metrics.mirror.catchUps.increment() }
        do {
            let ran: Void? = try await store.exclusively("reconcile") { try await reconcile(reason: reason, periodic: periodic) }
            if ran == nil { logger.debug("Another replica is reconciling", metadata: ["reason": "\(reason)"]) }
        } catch where Task.isCancelled {
            // The stop cut it short: not a failure (the next start records a gap and reconciles).
            logger.info("Reconciliation cut short by the stop", metadata: ["reason": "\(reason)"])
        } catch {
            metrics.mirror.catchUpFailures.increment()
            logger.warning("Reconciliation failed; the next one retries", metadata: ["reason": "\(reason)", "error": "\(error)"])
        }
    }

    private func reconcile(reason: String, periodic: Bool) async throws {
        feed.invalidate()
        let state = try await feed.snapshot()
        let afterGap = state.reconciledEpoch < state.epoch
        // Nothing mirrored yet (a new installation): nothing to check against Discord.
        guard try await !store.activeMirrorThreads(since: .distantPast).isEmpty else {
            if afterGap { try await feed.reconciled(state.epoch) }
            return
        }
        var threads: [Snowflake: UserID] = [:]
        let forums = catalog.forums
        var active: [DiscordChannel] = []
        // Each guild on its own: one app's guild Discord refuses leaves the others' threads checked
        // (the gap counts as reconciled only once every guild was read).
        var unread: [String] = []
        for guild in catalog.guilds.sorted() {
            do {
                active += try await discord.activeThreads(guildID: guild).threads
            } catch {
                logger.warning("Could not list a guild's active threads", metadata: ["guild": "\(guild)", "error": "\(error)"])
                unread.append(guild)
            }
        }
        for channel in active where channel.parentId.map(forums.contains) == true {
            guard let id = Snowflake(channel.id) else { continue }
            let mirrored = try await store.mirrorThread(id)
            var behind = false
            if let newest = channel.lastMessageId.flatMap({ Snowflake($0) }) {
                behind = mirrored?.newestSeen.map { $0 < newest } ?? true
            }
            guard afterGap || behind else { continue }
            if let owner = try await store.userID(forThread: channel.id) ?? mirrored?.owner { threads[id] = owner }
        }
        if periodic {
            let since = sync.ingestion.now().addingTimeInterval(-(settings.reconcileWindow / .seconds(1)))
            for thread in try await store.activeMirrorThreads(since: since) { threads[thread.id] = thread.owner }
        }
        // A timer's round with the feed live is only a safety net: paced, so it leaves Discord's
        // budget to users (a day of a popular app has tens of thousands of active threads).
        let pace = periodic && !afterGap ? max(1, settings.reconcileThreadsPerSecond) : nil
        for (index, (thread, owner)) in threads.sorted(by: { $0.key < $1.key }).enumerated() {
            if let pace, index > 0, index % pace == 0 { try await time.sleep(for: .seconds(1)) }
            try await sync.reconcile(thread, owner: owner)
        }
        guard unread.isEmpty else { throw GuildsUnread(guilds: unread) }
        if afterGap { try await feed.reconciled(state.epoch) }
        logger.info("Reconciliation done", metadata: ["reason": "\(reason)", "threads": "\(threads.count)", "after_gap": "\(afterGap)"])
    }

    /// Guilds whose active threads could not be listed: the run is a failure (retried), after
    /// checking every other guild's threads.
    struct GuildsUnread: Error, CustomStringConvertible {
        let guilds: [String]
        var description: String { "the active threads of \(guilds.joined(separator: ", ")) could not be listed" }
    }
}
