import Synchronization

/// Waits on a condition that others change: whoever changes it calls `changed()`, which wakes
/// every waiter to check again. Each wait has a deadline (`DeadlineExceeded` past it); a waiter
/// cancelled or timed out leaves the others working, since each has a wake-up signal of its own.
/// Nothing polls: what tests use to await an emulator's state.
public final class ChangeSignal: Sendable {
    private let waiters = Mutex<(next: UInt64, signals: [UInt64: WakeSignal])>((0, [:]))

    public init() {}

    /// The condition may have changed: every waiter checks again.
    public func changed() {
        for signal in waiters.withLock({ Array($0.signals.values) }) { signal.signal() }
    }

    /// Returns once `condition` holds; throws `DeadlineExceeded` naming `what` past `timeout`.
    public func wait(
        for what: @autoclosure () -> String, timeout: Duration, isolation: isolated (any Actor)? = #isolation,
        until condition: () -> Bool
    ) async throws {
        let signal = WakeSignal()
        let id = waiters.withLock { waiters in
            waiters.next &+= 1
            waiters.signals[waiters.next] = signal
            return waiters.next
        }
        defer { _ = waiters.withLock { $0.signals.removeValue(forKey: id) } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw DeadlineExceeded(what(), after: timeout) }
            _ = await signal.wait(upTo: left)
            try Task.checkCancellation()
        }
    }
}
