import Dispatch
import Synchronization

/// A wake-up for a loop that sleeps until there is work: `signal()` from anywhere, `wait` in the
/// loop. It holds at most one wake-up that nobody waited for, like a one-slot buffer.
///
/// Unlike an `AsyncStream` (whose iteration, once cancelled by a timeout, finishes the stream for
/// good so that every later wait returns at once and the loop spins), a wait that times out or is
/// cancelled here only leaves: the signal stays whole for the next wait, and a wake-up that came
/// meanwhile is kept for it.
public final class WakeSignal: Sendable {
    // The timer source is only touched by whoever took the waiter out of the list.
    private struct Waiter: @unchecked Sendable {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
        let timer: (any DispatchSourceTimer)?
    }

    private struct State {
        var pending = false
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())
    private static let timers = DispatchQueue(label: "threaddesk.wake-signal")

    /// Told how many waits are in progress after each change (tests await a wait this way).
    private let observer: (@Sendable (_ waiting: Int) -> Void)?

    public init(observer: (@Sendable (_ waiting: Int) -> Void)? = nil) {
        self.observer = observer
    }

    private func changed() {
        guard let observer else { return }
        observer(waiting)
    }

    /// Wakes the oldest wait, or the next one to begin when nobody waits.
    public func signal() {
        let woken = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.pending = true
                return nil
            }
            return state.waiters.removeFirst()
        }
        guard let woken else { return }
        woken.timer?.cancel()
        changed()
        woken.continuation.resume(returning: true)
    }

    /// Waits for a wake-up: true when woken, false when `timeout` (if any) passed first or the
    /// task was cancelled. Either way the signal keeps working for the next wait.
    @discardableResult
    public func wait(upTo timeout: Duration? = nil) async -> Bool {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let taken = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    var timer: (any DispatchSourceTimer)?
                    if let timeout {
                        let source = DispatchSource.makeTimerSource(queue: Self.timers)
                        source.setEventHandler { [weak self] in self?.leave(id) }
                        source.schedule(deadline: .now() + dispatchInterval(timeout), leeway: .milliseconds(1))
                        source.activate()
                        timer = source
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation, timer: timer))
                    return false
                }
                if taken {
                    continuation.resume(returning: true)
                    return
                }
                changed()
                if Task.isCancelled {
                    // A cancellation that came before the wait was stored found nothing to end.
                    leave(id)
                }
            }
        } onCancel: {
            leave(id)
        }
    }

    /// Ends wait `id` unwoken, if it still waits (a timeout or a cancellation; both may come).
    private func leave(_ id: UInt64) {
        let left = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let left else { return }
        left.timer?.cancel()
        changed()
        left.continuation.resume(returning: false)
    }

    /// Waits in progress (tests).
    public var waiting: Int { state.withLock { $0.waiters.count } }
}
