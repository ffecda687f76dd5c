import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// The conversations' timers: scheduled closes when due, `AUTO_CLOSE_DAYS`, one reminder per
/// wait past `REMIND_AFTER_MINUTES` of support hours, and the notes of closes the user's message
/// cancelled. Everything it acts on is in the store, so schedules survive restarts; a round runs
/// on one replica at a time (`JobLocks`), and every change it makes is conditional, so a replica
/// that acts late finds nothing left to do. Between rounds it sleeps until the next due date it
/// read from the store, or until something here changes (`LifecycleSignals`).
final class ConversationTimers: Service, Sendable, CustomStringConvertible {
    let store: any UserStore
    let closing: ConversationClosing
    let reminders: ConversationReminders
    let settings: LifecycleSettings
    let signals: LifecycleSignals
    let logger: Logger
    let time: ServerTime
    private let work: BackgroundWork
    static let workName = "conversation timers"
    /// How long a failed round (or one another replica holds) waits before the next.
    static let retryAfter: Duration = .seconds(30)
    /// Conversations taken per kind of work in one round.
    static let batch = 200

    var description: String { "ConversationTimers" }

    init(
        store: any UserStore, closing: ConversationClosing, reminders: ConversationReminders, settings: LifecycleSettings,
        signals: LifecycleSignals, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked
    ) {
        (self.store, self.closing, self.reminders, self.settings, self.signals) = (store, closing, reminders, settings, signals)
        (self.logger, self.time, self.work) = (logger, time, work)
        // Work whose time the clock passed, with no round under way: the tests' settled signal.
        work.watch(Self.workName) { [weak self] in
            guard let self else { return false }
            if signals.hasCancelled { return true }
            return self.nextWake.withLock { $0 }.map { $0 <= self.time.now().addingTimeInterval(0.001) } ?? false
        }
    }

    /// When the loop wakes next for work it knows of (nil: only when signalled).
    private let nextWake = Mutex<Date?>(nil)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.work.raise(Self.workName)
                let next = await self.round()
                self.nextWake.withLock { wake in
                    switch next {
                    case .idle: wake = nil
                    case .at(let date): wake = date
                    case .retry: wake = self.time.now().addingTimeInterval(Self.retryAfter / .seconds(1))
                    }
                }
                self.work.lower(Self.workName)
                switch next {
                case .idle: _ = await self.signals.wakeUps.wait()
                case .at(let date):
                    let delay = Duration.seconds(max(0, date.timeIntervalSince(self.time.now())))
                    _ = await self.signals.wakeUps.wait(upTo: max(delay, .milliseconds(1)), on: self.time.clock)
                case .retry: _ = await self.signals.wakeUps.wait(upTo: Self.retryAfter, on: self.time.clock)
                }
            }
        }
    }

    enum Next: Equatable {
        /// Nothing is due at any time: sleep until woken.
        case idle
        case at(Date)
        case retry
    }

    /// Does what is due now; says when it should look again.
    func round() async -> Next {
        do {
            let outcome = try await store.exclusively(Self.workName) { () async throws -> Next in
                try await self.sayCancelledCloses()
                let now = self.time.now()
                // One conversation's failure (a thread Discord refuses) holds up none of the others.
                var failed = false
                for conversation in try await self.store.dueConversationCloses(at: now, limit: Self.batch) {
                    failed = await !self.attempt("a scheduled close", of: conversation) {
                        _ = try await self.closing.closeByTimer(conversation, by: .scheduled, dueBy: now, idleBefore: nil)
                    } || failed
                }
                if let after = self.settings.autoCloseAfter {
                    let cutoff = now.addingTimeInterval(-(after / .seconds(1)))
                    for conversation in try await self.store.idleAnsweredConversations(answeredBefore: cutoff, limit: Self.batch) {
                        failed = await !self.attempt("an automatic close", of: conversation) {
                            _ = try await self.closing.closeByTimer(conversation, by: .auto, dueBy: nil, idleBefore: cutoff)
                        } || failed
                    }
                }
                let (reminderDue, remindersFailed) = try await self.remind(at: now)
                if failed || remindersFailed { return .retry }
                guard let next = try await self.nextDue(after: now, reminderDue: reminderDue) else { return .idle }
                // Work still due after a round that did what it could: looked at again in a while, never at once.
                return next > now ? .at(next) : .retry
            }
            return outcome ?? .retry
        } catch {
            logger.warning("The conversations' timers could not finish a round; trying again", metadata: ["error": "\(error)"])
            return .retry
        }
    }

    /// Reminds the waits that are due; returns when the earliest one not yet due is, and whether
    /// any could not be reminded (tried again after `retryAfter`).
    private func remind(at now: Date) async throws -> (Date?, failed: Bool) {
        guard let after = settings.remindAfter else { return (nil, false) }
        // A wait that began exactly `after` ago is due (the store's bound is strict).
        let candidates = try await store.unremindedWaits(
            startedBefore: now.addingTimeInterval(0.001 - after / .seconds(1)), limit: Self.reminderBatch)
        var next: Date?
        var failed = false
        for (conversation, due) in reminders.dueDates(of: candidates, after: after, now: now) {
            // Within a millisecond: a date computed from support hours may land a hair past the exact one.
            if due <= now.addingTimeInterval(0.001) {
                failed = await !attempt("a reminder", of: conversation) { try await self.reminders.remind(conversation, at: now) } || failed
            } else if next.map({ due < $0 }) ?? true {
                next = due
            }
        }
        return (next, failed)
    }

    /// Waits looked at in one round: those whose support hours put their reminder later are among
    /// them, so it is larger than the other batches.
    static let reminderBatch = 2_000

    /// Runs one conversation's work; false (and a log line) when it failed.
    private func attempt(_ what: String, of conversation: ConversationRecord, _ work: () async throws -> Void) async -> Bool {
        do {
            try await work()
            return true
        } catch {
            logger.warning(
                "The conversations' timers could not make \(what); trying again later",
                metadata: ["user": "\(conversation.owner.logValue)", "error": "\(error)"])
            return false
        }
    }

    /// When the next work is due, from the store's dates (a wait's reminder is due no earlier
    /// than `REMIND_AFTER_MINUTES` after it began; support hours may only make it later).
    func nextDue(after now: Date, reminderDue: Date? = nil) async throws -> Date? {
        let dates = try await store.conversationWorkDates()
        var candidates = [dates.closeDue, reminderDue].compactMap { $0 }
        if let after = settings.autoCloseAfter, let idle = dates.oldestIdleAnswer { candidates.append(idle.addingTimeInterval(after / .seconds(1))) }
        if let after = settings.remindAfter, let wait = dates.oldestUnremindedWait {
            let earliest = wait.addingTimeInterval(after / .seconds(1))
            // One already looked at (support hours put it later) is in `reminderDue`.
            if earliest > now || reminderDue == nil { candidates.append(earliest) }
        }
        return candidates.min()
    }

    /// Notes in the threads of the closes the users' messages cancelled.
    private func sayCancelledCloses() async throws {
        for cancelled in signals.takeCancelled() {
            let stamp = Int(cancelled.due.timeIntervalSince1970)
            do {
                try await closing.postNote(
                    "\(NoteMarkers.prefixes[0]) 🕑 The user wrote: the close scheduled for <t:\(stamp):f> is cancelled.", in: cancelled.thread,
                    owner: cancelled.owner, purpose: "close-cancelled", String(stamp))
            } catch {
                logger.notice("Could not say in the thread that a scheduled close was cancelled", metadata: ["error": "\(error)"])
            }
        }
    }
}
