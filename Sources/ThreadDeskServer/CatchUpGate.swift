import Deadlines
import Synchronization

/// Catch-up requests and their runs: a request is answered by a run that starts after it, so
/// none is skipped because another was under way; requests that come during a run share the next.
final class CatchUpGate: Sendable {
    private struct State {
        var started = 0
        var finished = 0
        /// The run number the latest request needs, and why it was asked for.
        var wanted = 0
        var reasons: Set<String> = []
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: (target: Int, continuation: CheckedContinuation<Void, any Error>)] = [:]
    }

    private let state = Mutex(State())
    /// Wakes the runner; holds at most one wake-up.
    let wakeUps = WakeSignal()

    init() {}

    /// Asks for a run; returns its number, to `wait(for:)`.
    @discardableResult
    func request(_ reason: String) -> Int {
        let target = state.withLock { state in
            state.wanted = state.started + 1
            state.reasons.insert(reason)
            return state.wanted
        }
        wakeUps.signal()
        return target
    }

    /// For the runner: the reasons of the next run, or nil when none is wanted.
    func startRun() -> String? {
        state.withLock { state in
            guard state.started < state.wanted else { return nil }
            state.started += 1
            defer { state.reasons = [] }
            return state.reasons.sorted().joined(separator: ", ")
        }
    }

    func finishRun() {
        let done = state.withLock { state in
            state.finished += 1
            let finished = state.finished
            let done = state.waiters.filter { $0.value.target <= finished }
            for id in done.keys { state.waiters[id] = nil }
            return done.values.map(\.continuation)
        }
        for continuation in done { continuation.resume() }
    }

    /// Returns once run `target` has finished; cancellable.
    func wait(for target: Int) async throws {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await suspendCancellably { continuation in
            let finished = state.withLock { state in
                if state.finished >= target { return true }
                state.waiters[id] = (target, continuation)
                return false
            }
            if finished { continuation.resume() }
        } abandon: { [weak self] in
            self?.abandon(id)
        }
    }

    private func abandon(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
    }
}
