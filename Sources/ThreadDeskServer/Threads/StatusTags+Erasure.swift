import Deadlines
import DiscordREST
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// An erasure and a status change of the same thread: one after the other, under the thread's lock.
extension StatusTags {
    /// The note while the thread's user is being erased; it goes with the erasure, after which
    /// the thread has no owner in the store.
    static let erasedNote = "erased"

    /// How long an erasure waits before it looks again at a thread's lock that another replica
    /// holds: nothing in this process hears when that one is let go.
    static let otherReplicaLook: Duration = .milliseconds(500)

    /// Word that a thread's lock was let go in this process (a status change done), for the
    /// erasures waiting on one. Of the process, not of one `StatusTags`: `markErased` needs no
    /// instance (status tags may be off here and on in another replica).
    static let threadLocks = LockReleases()

    /// Marks `thread` as its user's erasure settles it: a change under way on any replica
    /// finishes first (the thread's lock), and none is made after. Waits `wait` at most, on
    /// `time`'s clock: woken at once when a change in this process lets the lock go, looking
    /// again every `otherReplicaLook` for one in another replica.
    /// - Throws: `Busy` when the lock stayed held, `CancellationError`, and the store's errors.
    static func markErased(
        _ thread: Snowflake, in store: any GlobalValues & JobLocks, time: ServerTime = .system, wait: Duration = .seconds(60)
    ) async throws {
        // Listening before the first try: a release between a refused try and the wait is kept.
        let released = WakeSignal()
        let listening = threadLocks.listen(released)
        defer { threadLocks.stopListening(listening) }
        let deadline = time.elapsed() + wait
        while try await store.exclusively(key(thread), { try await store.setGlobalValue(key(thread), to: erasedNote) }) == nil {
            let now = time.elapsed()
            guard now < deadline else { throw Busy() }
            await time.wait(for: released, untilElapsed: min(deadline, now + otherReplicaLook))
            try Task.checkCancellation()
        }
        // Another erasure of the thread may wait for this one.
        threadLocks.released()
    }

    /// Wakes everyone listening when a thread's lock is let go; each listener has a signal of its
    /// own, so one that times out or is cancelled leaves the others (and its signal) working.
    final class LockReleases: Sendable {
        private let listeners = Mutex<(next: UInt64, signals: [UInt64: WakeSignal])>((0, [:]))

        func listen(_ signal: WakeSignal) -> UInt64 {
            listeners.withLock { listeners in
                listeners.next &+= 1
                listeners.signals[listeners.next] = signal
                return listeners.next
            }
        }

        func stopListening(_ id: UInt64) { _ = listeners.withLock { $0.signals.removeValue(forKey: id) } }

        /// A thread's lock was let go (which one does not matter: a listener tries its own again).
        func released() {
            for signal in listeners.withLock({ Array($0.signals.values) }) { signal.signal() }
        }
    }
}
