import Deadlines
import Synchronization

/// Catch-up requests and their runs: a request is answered by a run that starts after it, so
/// none is skipped because another was under way; requests that come during a run share the next.
final class CatchUpGate: Sendable {
    private struct State {
        var started = 0
        /// The run number the latest request needs, and why it was asked for.
        var wanted = 0
        var reasons: Set<String> = []
    }

    private let state = Mutex(State())
    /// Wakes the runner; holds at most one wake-up.
    let wakeUps = WakeSignal()

    private let work: BackgroundWork
    static let workName = "reconciliation"

    /// The first run (the server's start is a gap) is due from the start.
    init(work: BackgroundWork = .untracked) {
        self.work = work
        work.raise(Self.workName)
    }

    /// Asks for a run; returns its number.
    @discardableResult
    func request(_ reason: String) -> Int {
        let target = state.withLock { state in
            state.wanted = state.started + 1
            state.reasons.insert(reason)
            work.raise(Self.workName)
            return state.wanted
        }
        wakeUps.signal()
        return target
    }

    /// For the runner: the reasons of the next run, or nil when none is wanted.
    func startRun() -> String? {
        state.withLock { state in
            guard state.started < state.wanted else {
                work.lower(Self.workName)
                return nil
            }
            state.started += 1
            defer { state.reasons = [] }
            return state.reasons.sorted().joined(separator: ", ")
        }
    }
}
