import Foundation
import Logging
import Synchronization
import ThreadDeskCore

/// The outbox's deliveries under way in this process: one task per user whose queue is due, at
/// most `concurrency` users at once, and the wait for them at shutdown. Kept apart from the loop
/// that looks for due queues, so what is running is in one place (and so is what a stop waits for).
final class OutboxRuns: Sendable {
    private let concurrency: Int
    /// How long the deliveries under way at shutdown may go on before they are cancelled.
    private let drainTime: Duration
    /// The stop's shared drain, when the server has one: the wait ends with it too, so a stop
    /// whose earlier parts took their time still ends within its grace.
    private let stop: ShutdownDrain?
    /// The drain's wait is on the server's clock: a test that drives it decides when it runs out.
    private let time: ServerTime
    private let logger: Logger
    /// The users whose delivery is under way.
    private let inFlight = Mutex<Set<UserID>>([])
    /// The deliveries under way, by a key of their own.
    private let running = Mutex<[UUID: Task<Void, Never>]>([:])

    init(concurrency: Int, drain: Duration, stop: ShutdownDrain? = nil, time: ServerTime, logger: Logger) {
        (self.concurrency, drainTime, self.stop, self.time, self.logger) = (max(1, concurrency), drain, stop, time, logger)
    }

    /// Of `owners`, those whose delivery may start now: none of theirs under way, at most
    /// `concurrency` busy. They count as busy from here on.
    func take(_ owners: [UserID]) -> [UserID] {
        inFlight.withLock { busy in
            var started: [UserID] = []
            for owner in owners where !busy.contains(owner) && busy.count < concurrency {
                busy.insert(owner)
                started.append(owner)
            }
            return started
        }
    }

    /// Runs `delivery` of `owner` (given by `take`) in a task of its own; once it is over, the
    /// user is free for another and `ended` runs.
    func start(_ owner: UserID, _ delivery: @escaping @Sendable () async -> Void, ended: @escaping @Sendable () -> Void) {
        let id = UUID()
        let task = Task {
            await delivery()
            _ = self.inFlight.withLock { $0.remove(owner) }
            _ = self.running.withLock { $0.removeValue(forKey: id) }
            ended()
        }
        running.withLock { $0[id] = task }
    }

    /// Waits for the deliveries under way, and cancels those still running after the drain (the
    /// outbox's own, or what is left of the stop's if that is less).
    func drain() async {
        let tasks = running.withLock { Array($0.values) }
        guard !tasks.isEmpty else { return }
        let drainTime = stop.map { min(self.drainTime, $0.left) } ?? self.drainTime
        let drained = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for task in tasks { await task.value }
                return true
            }
            group.addTask {
                try? await self.time.sleep(for: drainTime)
                return false
            }
            let first = await group.next() ?? true
            // Past the drain: the deliveries are cancelled, which ends the wait for them too.
            if !first { for task in tasks { task.cancel() } }
            group.cancelAll()
            return first
        }
        if !drained {
            logger.warning("Deliveries still under way at shutdown were cancelled; their messages wait in the store", metadata: ["count": "\(tasks.count)"])
        }
    }
}
