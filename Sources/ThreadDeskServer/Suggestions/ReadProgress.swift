import Synchronization

/// Which starters a read of the FAQ forum must fetch: those not fetched since the last gap (a
/// restored snapshot's, and everything after a gap, included). One fetched since is current: the
/// gateway's events have kept it so. Also whether a gap during a read asks for another read.
final class ReadProgress: Sendable {
    private struct State {
        /// Posts whose starter was fetched since the last gap.
        var current: Set<String> = []
        /// Moves on at every gap.
        var generation = 0
        /// A gap came since the last read began: another read is due.
        var gapSinceBegin = false
    }

    private let state = Mutex(State())

    /// A read begins.
    func begin() {
        state.withLock { $0.gapSinceBegin = false }
    }

    /// The gaps so far: a fetch counts as current only if none came while it ran.
    var generation: Int { state.withLock { $0.generation } }

    /// Whether the post's starter was fetched since the last gap.
    func isCurrent(_ post: String) -> Bool {
        state.withLock { $0.current.contains(post) }
    }

    /// The read fetched this post's starter; it began at `generation`.
    func fetched(_ post: String, generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.current.insert(post) }
        }
    }

    /// A read ended (`failed` or not): `lower` runs, under this lock, unless a gap since it began
    /// asked for another read (a failed read is tried again anyway).
    func endRead(failed: Bool = false, lower: () -> Void) {
        state.withLock { state in
            if failed || !state.gapSinceBegin { lower() }
        }
    }

    /// Events may have been missed: nothing fetched so far is current. `raise` runs under this lock.
    func gap(raise: () -> Void) {
        state.withLock { state in
            state.generation += 1
            state.current = []
            state.gapSinceBegin = true
            raise()
        }
    }
}
