import ThreadDeskWire
import AssistClient
import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Drafted answers (and, with `ASSIST_AUTO=away`, answers while away: `Drafts+Away.swift`): when a user's message leaves a thread needing a reply, a draft grounded in the
/// app's FAQ is posted in the thread as a note with Send / Edit / Discard buttons; nothing reaches
/// the user until an agent clicks. A newer user message replaces a draft not acted on; an agent's
/// reply drops it. Drafting runs beside delivery, never in its path: the provider slow, failing or
/// over budget costs the user nothing, and the thread simply gets no draft.
///
/// A draft's state is in the store and changes under its user's lock, so a button works on any
/// replica and two clicks, two agents or a click delivered twice act once.
final class Drafts: Service, Sendable, CustomStringConvertible {
    struct Parts: Sendable {
        let users: UserSerializer
        let store: any UserStore
        let discord: DiscordClient<AnyClock>
        let ingestion: MirrorIngestion
        let voice: SupportVoice
        /// Whether support is away, for the answers while away.
        let away: SupportAvailability
        let faq: FAQShelf
        let assist: AssistService
        let watch: ReplyWatch
        let catalog: AppCatalog
        let desk: DeskSettings
        let ids: MessageIDs
        let logger: Logger
        let time: ServerTime
    }

    let parts: Parts
    let work: BackgroundWork
    /// Which threads wait for a turn and which have one now.
    private let schedule = Mutex(Schedule())
    static let workName = "drafts"
    /// FAQ answers given to the model.
    static let matches = 3
    /// Drafts asked of the provider at once, at most (a turn asleep for its delay takes no slot).
    static let composeLimit = 4
    private let composing = Slots(limit: Drafts.composeLimit)
    /// Beyond the provider's own deadline, what a turn's Discord calls and store writes may take.
    static let turnMargin: Duration = .seconds(60)
    /// A draft being sent for longer than this was cut off by a crash: it may or may not have gone.
    static let sendingGivenUpAfter: TimeInterval = 120
    /// Closed drafts are kept this long (their notes stay in Discord), then pruned.
    static let keptDays = 30

    struct Schedule: Sendable {
        /// News for threads without a turn yet (or whose turn runs: it goes next).
        var pending: [Snowflake: ReplyWatch.News] = [:]
        var busy: Set<Snowflake> = []
        /// Pending news not counted as work: it waits behind its thread's turn, which may be
        /// asleep on the clock (a burst's delay) and is counted itself. It counts again once
        /// that turn ends.
        var uncounted: Set<Snowflake> = []
    }

    var description: String { "Drafts" }

    /// How long the clicks under way at a graceful shutdown may take to finish.
    let drain: ShutdownDrain
    /// When this process's drafts began: a send left `sending` before it was cut off by a stop or
    /// a crash (on a store only this process uses).
    let startedAt: Date

    init(_ parts: Parts, work: BackgroundWork = .untracked, drain: ShutdownDrain) {
        self.parts = parts
        self.work = work
        self.drain = drain
        startedAt = parts.time.now()
        // Counted from the start: a test that settles the new server finds the sends a crash cut
        // off already given up (`recoverCutOffSends` ends it).
        work.begin(Self.recoveryWorkName)
        clicks = InteractionLine(Self.workName, stop: drain, wakeUps: parts.watch.wakeUps, work: work, logger: parts.logger)
    }

    /// Button clicks and modal submits: 32 answered at once, 256 waiting at most.
    private let clicks: InteractionLine
    /// How long one click may take in all.
    static let clickTimeout: Duration = .seconds(60)

    /// A click on a draft's button, or the edit modal's submit, as the gateway heard it.
    func receive(_ interaction: DiscordInteraction) {
        clicks.receive(interaction)
    }

    /// Set when a graceful shutdown begins: no click or turn starts after it.
    private let stopping = Mutex(false)

    /// Clicks under way when a graceful shutdown begins are finished (an agent's Send is not cut
    /// between Discord's post and the draft's record) for at most `drain`; then they are cancelled
    /// and the process goes. Turns (drafting, answering while away) are cancelled at once: a
    /// user's message that loses its draft loses nothing else.
    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await cancelWhenGracefulShutdown { await self.pruneDaily() } }
                group.addTask { await cancelWhenGracefulShutdown { await self.recoverCutOffSends() } }
                while !self.stopping.withLock({ $0 }), !Task.isCancelled {
                    let taken = self.clicks.take()
                    for interaction in taken {
                        group.addTask {
                            do {
                                try await Deadline.within(Self.clickTimeout) { try await self.answer(interaction) }
                            } catch {
                                self.parts.logger.warning("Could not answer a draft's button", metadata: ["interaction": "\(interaction)", "error": "\(error)"])
                            }
                            self.clicks.done()
                        }
                    }
                    let started = self.startTurns()
                    for (thread, news) in started {
                        group.addTask {
                            await cancelWhenGracefulShutdown { await self.turn(thread, news) }
                            self.schedule.withLock { schedule in
                                schedule.busy.remove(thread)
                                // The news that waited is due now: counted before this turn's piece ends.
                                if schedule.uncounted.remove(thread) != nil { self.work.begin(Self.workName) }
                            }
                            self.work.end(Self.workName)
                            self.parts.watch.wakeUps.signal()
                        }
                    }
                    if taken.isEmpty && started.isEmpty { _ = await self.parts.watch.wakeUps.wait() }
                }
                await self.clicks.drain()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.drain.begin()
            self.stopping.withLock { $0 = true }
            self.parts.watch.wakeUps.signal()
        }
    }

    /// Takes the watch's news into the schedule and hands out turns, one per thread at a time
    /// (at most `ReplyWatch.limit` threads). Each thread's news is one piece of work, from the watch's note to the
    /// end of its turn (news merged into news already waiting ends its own piece).
    private func startTurns() -> [(Snowflake, ReplyWatch.News)] {
        let news = parts.watch.take()
        return schedule.withLock { schedule in
            for (thread, item) in news {
                if let waiting = schedule.pending[thread] {
                    schedule.pending[thread] = Self.merged(waiting, item)
                    work.end(Self.workName)
                } else {
                    schedule.pending[thread] = item
                    if schedule.busy.contains(thread) {
                        schedule.uncounted.insert(thread)
                        work.end(Self.workName)
                    }
                }
            }
            var started: [(Snowflake, ReplyWatch.News)] = []
            for thread in schedule.pending.keys.sorted() where !schedule.busy.contains(thread) {
                guard let item = schedule.pending.removeValue(forKey: thread) else { continue }
                schedule.busy.insert(thread)
                started.append((thread, item))
            }
            return started
        }
    }

    static func merged(_ earlier: ReplyWatch.News?, _ later: ReplyWatch.News) -> ReplyWatch.News {
        guard var merged = earlier else { return later }
        if let user = later.userWrote { merged.userWrote = max(merged.userWrote ?? user, user) }
        if let reply = later.supportReplied { merged.supportReplied = max(merged.supportReplied ?? reply, reply) }
        return merged
    }

    /// Closed drafts older than `keptDays` go, at start and daily, one replica at a time.
    private func pruneDaily() async {
        while !Task.isCancelled {
            let before = parts.time.now().addingTimeInterval(-Double(Self.keptDays) * 86_400)
            do {
                _ = try await parts.store.exclusively("assist-drafts-prune") {
                    try await Deadline.within(.seconds(60)) { try await self.parts.store.pruneDrafts(closedBefore: before) }
                }
            } catch {
                parts.logger.notice("Could not prune old drafts", metadata: ["error": "\(error)"])
            }
            do { try await parts.time.sleep(for: .seconds(86_400)) } catch { return }
        }
    }

    /// What one piece of news does: settles the drafts it outdates, then (after the delay, so a
    /// burst of messages gets one draft) drafts an answer to the newest user message.
    private func turn(_ thread: Snowflake, _ news: ReplyWatch.News) async {
        do {
            guard let app = parts.catalog.app(of: news.owner), let settings = parts.assist.settings(for: app), settings.watchesReplies else { return }
            try await Deadline.within(Self.turnMargin) {
                if let reply = news.supportReplied {
                    try await self.settle(thread, owner: news.owner, answeredBefore: reply, as: .dropped)
                    try await self.agentReplied(owner: news.owner, reply: reply, away: settings.auto == .away)
                }
                if let newest = news.userWrote { try await self.settle(thread, owner: news.owner, answeredBefore: newest, as: .replaced) }
            }
            guard let newest = news.userWrote else { return }
            let delay = parts.assist.deployment.draftDelay
            if delay > .zero {
                // This turn's piece of work sleeps on the server's clock (a test's manual clock moves it).
                try await work.endSleepThenBegin(Self.workName, for: delay, on: parts.time)
                // A newer message in the meantime drafts instead: its news waits for this thread.
                if schedule.withLock({ $0.pending[thread]?.userWrote.map { $0 > newest } ?? false }) { return }
            }
            // A turn waits for a slot at most a call's time; once it has one, each call to the
            // provider has a deadline of its own (a slow answer while away leaves the draft its
            // time), begun only then, so no call starts with its time already spent.
            let within = parts.assist.deployment.timeout + Self.turnMargin
            try await composing.run(waitingUpTo: within, on: parts.time.clock) {
                // An answer while away settles the message for now: the agents read it in its note.
                if await self.answeredWhileAway(thread, news.owner, newest, app: app, settings: settings, within: within) { return }
                guard settings.drafts else { return }
                try await Deadline.within(within) { try await self.compose(thread, owner: news.owner, answering: newest, app: app) }
            }
        } catch {
            parts.logger.notice("A draft turn failed", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }
}

/// At most `limit` bodies run at once; the others wait their turn, each for as long as it says.
final class Slots: Sendable {
    private let used = Mutex(0)
    private let freed = WakeSignal()
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// The bodies running now.
    var running: Int { used.withLock { $0 } }

    /// Runs `body` once a slot is free. Throws `DeadlineExceeded` when none freed within
    /// `patience` on `clock`, and `CancellationError` when the task was cancelled first.
    func run<T: Sendable, C: Clock<Duration>>(waitingUpTo patience: Duration, on clock: C, _ body: () async throws -> T) async throws -> T {
        let deadline = clock.now.advanced(by: patience)
        var woken = false
        while !used.withLock({ used in
            guard used < limit else { return false }
            used += 1
            return true
        }) {
            let cancelled = Task.isCancelled
            if cancelled || clock.now >= deadline {
                // The wake-up taken may have been meant for a slot just freed: the next waiter gets it.
                if woken { freed.signal() }
                if cancelled { throw CancellationError() }
                throw DeadlineExceeded("a slot to ask the assistant", after: patience)
            }
            woken = await freed.wait(upTo: clock.now.duration(to: deadline), on: clock)
        }
        defer {
            used.withLock { $0 -= 1 }
            freed.signal()
        }
        return try await body()
    }
}
