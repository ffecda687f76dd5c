import Synchronization

/// Names every wait in flight — a request, a per-user lock awaited or held, a call to another
/// process — with when it began, so that a watchdog can log the ones that last too long.
///
/// It is a debugging switch (`DEBUG_WAIT_SECONDS`): without a tracker bound to the task,
/// `track` costs one task-local read.
public final class WaitTracker: Sendable {
    /// The tracker the current task reports to.
    @TaskLocal public static var current: WaitTracker?
    /// What the current task works for ("POST /v1/messages", "gateway event"), named in reports.
    @TaskLocal public static var job: String?

    public struct Wait: Sendable, Equatable, CustomStringConvertible {
        public var what: String
        public var job: String?
        public var age: Duration

        public var description: String {
            let tenths = Int((age / .milliseconds(100)).rounded())
            return "\(what) has waited \(tenths / 10).\(tenths % 10) s" + (job.map { " (for \($0))" } ?? "")
        }
    }

    private struct Entry {
        var what: String
        var job: String?
        var started: ContinuousClock.Instant
        /// How many thresholds of age have been reported already.
        var reported = 0
    }

    private let state = Mutex<(next: UInt64, open: [UInt64: Entry])>((0, [:]))

    public init() {}

    /// Runs `body` as a wait named `what`, seen by the current tracker while it lasts.
    public static func track<T>(
        _ what: @autoclosure () -> String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard let tracker = current else { return try await body() }
        let id = tracker.begin(what(), job: job)
        defer { tracker.end(id) }
        return try await body()
    }

    /// Runs `body` as the job `name`: the waits inside it are reported as done for it.
    public static func run<T>(
        job name: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard current != nil else { return try await body() }
        return try await $job.withValue(name) {
            try await track(name, isolation: isolation, body)
        }
    }

    func begin(_ what: String, job: String?) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.open[state.next] = Entry(what: what, job: job, started: .now)
            return state.next
        }
    }

    func end(_ id: UInt64) {
        _ = state.withLock { $0.open.removeValue(forKey: id) }
    }

    /// Waits in flight right now, oldest first.
    public var open: [Wait] {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.open.values.sorted { $0.started < $1.started }.map { Wait(what: $0.what, job: $0.job, age: $0.started.duration(to: now)) }
        }
    }

    /// Waits that have crossed another multiple of `threshold` since the last call: each is
    /// reported once at `threshold`, again at twice it, and so on.
    public func overdue(threshold: Duration) -> [Wait] {
        let now = ContinuousClock.now
        return state.withLock { state in
            var found: [(ContinuousClock.Instant, Wait)] = []
            for (id, entry) in state.open {
                let age = entry.started.duration(to: now)
                let multiples = Int(age / threshold)
                guard multiples > entry.reported else { continue }
                state.open[id]!.reported = multiples
                found.append((entry.started, Wait(what: entry.what, job: entry.job, age: age)))
            }
            return found.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
