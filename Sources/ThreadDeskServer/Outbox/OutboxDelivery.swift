import Deadlines
import DiscordREST
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// Delivers the messages the outbox accepted into their users' threads, in a task of its own:
/// users side by side (at most `OutboxSettings.concurrency` at once), one user's messages in the
/// order they were accepted, under the user's lock and the queue's hold (`claimOutbox`), so any
/// replica delivers any user's queue and each message is posted once (Discord's `nonce` with
/// `enforce_nonce`, and the thread's adoption record, cover an answer lost on the way back).
/// A delivery that fails for a passing reason (Discord down, a 429, the store) waits with backoff
/// and holds up the user's later messages; one Discord refuses for good becomes `failed` and the
/// next goes on.
final class OutboxDelivery: Service, Sendable, CustomStringConvertible {
    /// What a delivery works with, given once at the start.
    struct Parts: Sendable {
        let store: any UserStore
        let users: UserSerializer
        let threads: ThreadService
        let ingestion: MirrorIngestion
        /// The away message, for a user who wrote while support is away.
        let away: SupportAvailability?
        /// The curated answers, to name the one the user saw before writing; nil without a FAQ forum.
        let faq: FAQShelf
        let settings: OutboxSettings
        /// Ids for a placeholder thread, when the user's thread is gone and no new one may be made yet.
        let ids: MessageIDs
        let metrics: ServerMetrics
        let logger: Logger
        let time: ServerTime
        /// The debug watchdog's tracker (`DEBUG_WAIT_SECONDS`): a slow Discord call of a delivery is
        /// named as done for the outbox.
        let waits: WaitTracker?
        /// Each delivery continues the trace of the send that accepted the message.
        let traces: Traces
        /// Told when a note another feature enqueued is in the thread (crash reports); nil when none listens.
        var notes: (any DeliveredNoteListener)? = nil
    }

    let parts: Parts
    /// What refused messages keep: their files within the user's own cap.
    var failedFiles: FailedFiles { FailedFiles(store: parts.store, ingestion: parts.ingestion, settings: parts.settings, logger: parts.logger) }
    /// This process, as the holder of the queues it delivers.
    let holder = "replica-" + UUID().uuidString
    /// How long the loop sleeps at most before it looks for due queues again (another replica may
    /// have accepted messages, or died holding some).
    let idlePoll: Duration = .seconds(5)
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork
    /// The deliveries under way, and the wait for them at shutdown.
    private let runs: OutboxRuns
    static let workName = "outbox"

    var description: String { "OutboxDelivery" }

    init(
        store: any UserStore, users: UserSerializer, threads: ThreadService, ingestion: MirrorIngestion, away: SupportAvailability?,
        faq: FAQShelf, settings: OutboxSettings, ids: MessageIDs, metrics: ServerMetrics, logger: Logger, time: ServerTime,
        waits: WaitTracker? = nil, traces: Traces = .off, work: BackgroundWork = .untracked, notes: (any DeliveredNoteListener)? = nil,
        stop: ShutdownDrain? = nil
    ) {
        parts = Parts(
            store: store, users: users, threads: threads, ingestion: ingestion, away: away, faq: faq, settings: settings, ids: ids, metrics: metrics,
            logger: logger, time: time, waits: waits, traces: traces, notes: notes)
        runs = OutboxRuns(concurrency: settings.concurrency, drain: settings.drain, stop: stop, time: time, logger: logger)
        self.work = work
        // Queues due that no task has taken up yet (the clock moved past a backoff).
        work.watch(Self.workName) { [weak self] in
            guard let self, let owners = try? await self.parts.store.outboxOwnersDue(at: self.parts.time.now(), limit: 1), !owners.isEmpty else {
                return false
            }
            self.wake()
            return true
        }
    }

    /// A message was accepted (or changed while it waits).
    func wake() {
        woken.withLock { woken in
            if !woken { work.raise(Self.workName) }
            woken = true
        }
        wakeUps.signal()
    }

    /// Whether a wake-up came that no look for due queues has answered yet.
    private let woken = Mutex(false)
    let stopping = Mutex(false)
    /// When a failing delivery was last logged: a stuck outbox is logged once a minute, not per message.
    private let lastFailureLog = Mutex<Date?>(nil)
    /// Whether Discord failed the last delivery of this process: the next one it takes means
    /// Discord is back, and every queue waiting out a backoff is tried at once.
    let discordFailing = Mutex(false)

    /// Looks for due queues whenever woken (or every `idlePoll`) and starts a task for each user
    /// who has one and none running. At shutdown the deliveries under way end after their current
    /// message, or are cancelled after `OutboxSettings.drain` on the server's clock (`OutboxRuns`);
    /// what is left waits in the store for the next start or another replica.
    func run() async throws {
        // One process serves a store without a bus (SQLite): the holds left in it are those of the
        // process before this one (killed mid-delivery), whose queues are this one's now, not
        // after their holds run out. Replicas over PostgreSQL wait for a dead one's holds to pass.
        if parts.store.bus == nil {
            do {
                try await parts.store.releaseOutboxHolds(except: holder)
            } catch {
                logFailure("Could not release the outbox holds left by the last run", error: error)
            }
        }
        await withGracefulShutdownHandler {
            // The look for due queues ends at the stop, a store read under way with it (on a machine
            // ending thousands of connections a read can take seconds): only the deliveries under
            // way get the drain.
            await cancelWhenGracefulShutdown { await self.lookForDueQueues() }
            await runs.drain()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.wake()
        }
    }

    /// Starts a delivery for each due queue, whenever woken, until the stop.
    private func lookForDueQueues() async {
        // A cancelled wait returns at once: cancellation ends the loop too, or it would spin.
        while !stopping.withLock({ $0 }), !Task.isCancelled {
            let answering = woken.withLock { woken in
                defer { woken = false }
                return woken
            }
            let started = await due()
            work.begin(Self.workName, count: started.count)
            for owner in started {
                runs.start(owner) {
                    await WaitTracker.$current.withValue(self.parts.waits) {
                        await WaitTracker.run(job: "outbox delivery") { await self.deliverQueue(of: owner) }
                    }
                } ended: {
                    self.wake()
                    self.work.end(Self.workName)
                }
            }
            // The gauge is written before the wake-up counts as answered: what settles on the
            // outbox's work reads the depth this pass saw.
            await reportDepth()
            if answering { woken.withLock { if !$0 { work.lower(Self.workName) } } }
            await sleepUntilWoken(atLeast: started.isEmpty ? .milliseconds(250) : .milliseconds(10))
        }
    }

    /// Users with a queue due and no delivery of theirs under way, at most `concurrency` busy.
    private func due() async -> [UserID] {
        do {
            return runs.take(try await parts.store.outboxOwnersDue(at: parts.time.now(), limit: 1000))
        } catch {
            // Cut by the stop: not a failure.
            if !Task.isCancelled { logFailure("Could not read the outbox", error: error) }
            return []
        }
    }

    /// Until woken, the next queue is due, or `idlePoll` passed (a moment on the clock, read
    /// before the store: a clock that moves meanwhile makes the wake-up earlier, never later).
    private func sleepUntilWoken(atLeast minimum: Duration) async {
        let start = parts.time.elapsed()
        var wait = idlePoll
        if let next = try? await parts.store.nextOutboxDue() {
            wait = max(minimum, min(wait, .milliseconds(Int64(max(0, next.timeIntervalSince(parts.time.now())) * 1000))))
        }
        await parts.time.wait(for: wakeUps, untilElapsed: start + wait)
    }

    /// The outbox's depth and its oldest message's wait, for `/metrics`.
    private func reportDepth() async {
        guard let usage = try? await parts.store.outboxUsage(of: nil) else { return }
        parts.metrics.outbox.depth.set(to: Double(usage.count))
        parts.metrics.outbox.oldest.set(to: usage.oldest.map { max(0, parts.time.now().timeIntervalSince($0)) } ?? 0)
    }

    /// Delivers `owner`'s due messages in order, while this process holds their queue.
    private func deliverQueue(of owner: UserID) async {
        do {
            guard try await claim(owner) else { return }
            for item in try await parts.store.outbox(of: owner) where item.isQueued {
                // Compared as the store compares them (seconds since 1970): a date read back from the
                // store may differ from the clock's in its last bit, and the store called it due.
                if stopping.withLock({ $0 }) || item.nextAttempt.timeIntervalSince1970 > parts.time.now().timeIntervalSince1970 { break }
                guard try await claim(owner) else { return }
                let outcome = try await parts.traces.span(
                    "outbox.deliver", kind: .producer, parent: parts.traces.context(traceparent: item.traceparent),
                    attributes: parts.traces.isOn ? ["threaddesk.attempt": .int64(Int64(item.attempts + 1))] : [:]
                ) { _ in try await deliver(item.id, of: owner) }
                if case .later = outcome { break }
            }
            try await parts.store.releaseOutbox(of: owner, holder: holder)
        } catch {
            // The store (or the user's lock) failed us: the queue's next attempt waits its backoff
            // too, so a failure that repeats costs one try per backoff, not a loop.
            logFailure("Could not deliver a user's outbox; it is tried again", error: error, owner: owner)
            if var first = try? await parts.store.outbox(of: owner).first(where: \.isQueued) {
                first.attempts += 1
                first.nextAttempt = parts.time.now().addingTimeInterval(backoff(after: first.attempts) / .seconds(1))
                _ = try? await parts.store.updateOutboxItem(first, fence: OutboxFence(holder: holder, now: parts.time.now()))
            }
            try? await parts.store.releaseOutbox(of: owner, holder: holder)
        }
    }

    /// Logs a failure at most once a minute (a Discord outage fails every delivery).
    func logFailure(_ message: Logger.Message, error: any Error, owner: UserID? = nil) {
        let now = parts.time.now()
        let due = lastFailureLog.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        var metadata: Logger.Metadata = ["error": "\(error)"]
        if let owner { metadata["user"] = "\(owner.logValue)" }
        parts.logger.warning(message, metadata: metadata)
    }
}

/// Another holder took the user's queue while a delivery was under way (its hold ran out): the
/// delivery stops; the other goes on from what the store says, the nonce answering any post again.
struct OutboxHoldLost: Error, CustomStringConvertible {
    var description: String { "the outbox queue's hold ran out during a delivery" }
}
