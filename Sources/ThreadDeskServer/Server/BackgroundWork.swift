import Deadlines
import Synchronization

/// What the server's background parts have to do (queued or under way), so that a test can await
/// the moment they are all done instead of polling for each consequence. The parts report here
/// (`begin`/`end`, or `raise`/`lower` for a part with one flag of pending work); `settled()` returns
/// once every count is zero, every probe finds nothing left unclaimed, and nothing moved meanwhile.
///
/// A running server uses `untracked`: every report is one branch on a constant, and nothing waits
/// or polls. Waits are continuation-based (`WakeSignal`), so a waiter cancelled by its deadline
/// leaves the signal working for the next one.
public final class BackgroundWork: Sendable {
    /// A part's probe: whether it has work due that it has not taken up yet (pushes due in the
    /// store); a probe that finds some also nudges its part to take it up.
    public typealias Probe = @Sendable () async -> Bool

    /// `settled()` or `gatewayCaughtUp` ran out of time; names what was still busy.
    public struct Unsettled: Error, CustomStringConvertible {
        public let busy: [String]
        public let timeout: Duration
        public var description: String {
            "the server's background work did not settle within \(timeout); still busy: \(busy.joined(separator: ", "))"
        }
    }

    private struct State {
        var counts: [String: Int] = [:]
        var flags: Set<String> = []
        /// Moves on every report: a settle seen at one generation holds only if it has not moved.
        var generation: UInt64 = 0
        /// The last gateway sequence number each session's events were handed over at.
        var gateway: [String: Int] = [:]
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: WakeSignal] = [:]
        var nextTimer: UInt64 = 0
        /// Parts asleep until a moment of their clock, and the clock's reading (time since start).
        var timers: [UInt64: (part: String, due: Duration, elapsed: @Sendable () -> Duration)] = [:]
        /// What parts report that is not work to settle (the open event streams), by name.
        var levels: [String: Int] = [:]

        var busy: [String] {
            counts.filter { $0.value > 0 }.map { "\($0.key) (\($0.value))" }.sorted() + flags.sorted()
                + timers.values.filter { $0.elapsed() >= $0.due }.map { "\($0.part) (its time has come)" }.sorted()
        }
    }

    private let tracking: Bool
    private let state = Mutex(State())
    private let probes = Mutex<[(part: String, probe: Probe)]>([])

    /// Tracks the work, for tests.
    public init() { tracking = true }
    private init(tracking: Bool) { self.tracking = tracking }

    /// Keeps no account: what a running server uses.
    public static let untracked = BackgroundWork(tracking: false)

    /// `count` pieces of `part`'s work were queued or began.
    public func begin(_ part: String, count: Int = 1) {
        guard tracking, count > 0 else { return }
        change { $0.counts[part, default: 0] += count }
    }

    /// `count` pieces of `part`'s work ended (done, dropped, or handed to a part that reported it).
    public func end(_ part: String, count: Int = 1) {
        guard tracking, count > 0 else { return }
        change { state in
            let left = (state.counts[part] ?? 0) - count
            state.counts[part] = left > 0 ? left : nil
        }
    }

    /// `part` has work pending (once, however often it is raised).
    public func raise(_ part: String) {
        guard tracking else { return }
        change { _ = $0.flags.insert(part) }
    }

    /// `part` has no work pending any more.
    public func lower(_ part: String) {
        guard tracking else { return }
        change { _ = $0.flags.remove(part) }
    }

    /// Runs `body` as one piece of `part`'s work.
    public func track<T>(_ part: String, _ body: () async throws -> T) async rethrows -> T {
        begin(part)
        defer { end(part) }
        return try await body()
    }

    /// Ends one piece of `part`'s work, sleeps `duration` on `time`'s clock, then begins the next
    /// piece (the caller ends it): a periodic round. The timer is set before the piece ends and goes
    /// after the next begins, so there is no moment with neither; while asleep past its moment (the
    /// clock moved, the sleeper not yet running) it counts as work. A test that moves a manual clock
    /// and settles finds the round done, not still to come.
    func endSleepThenBegin(_ part: String, for duration: Duration, on time: ServerTime) async throws {
        guard tracking else { return try await time.sleep(for: duration) }
        let elapsed = time.elapsed
        let due = elapsed() + duration
        let id = state.withLock { state in
            state.nextTimer &+= 1
            state.timers[state.nextTimer] = (part, due, elapsed)
            return state.nextTimer
        }
        end(part)
        defer { change { $0.timers[id] = nil } }
        // Until the moment set above, however far the clock moved since (a deadline: a clock moved
        // between reading it and sleeping must not push the wake-up past the moment).
        try await time.sleep(untilElapsed: due)
        begin(part)
    }

    /// Moves `level` by `delta`: a state a part reports that is no work (the open event streams),
    /// which a test awaits with `level(_:within:until:)` instead of polling a metric. Deltas, so
    /// reports from several threads add up whatever their order. Settling ignores levels.
    public func adjust(_ level: String, by delta: Int) {
        guard tracking, delta != 0 else { return }
        let waiters = state.withLock { state in
            state.levels[level, default: 0] += delta
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.signal() }
    }

    /// What `level` is now (0 when never reported).
    public func level(_ level: String) -> Int { state.withLock { $0.levels[level] ?? 0 } }

    /// Returns once `condition` holds for `level`; throws `Unsettled` naming it past `timeout`.
    public func level(_ level: String, within timeout: Duration = .seconds(120), until condition: (Int) -> Bool) async throws {
        precondition(tracking, "an untracked level never moves")
        try await waitUntil(timeout) { state in
            let value = state.levels[level] ?? 0
            return condition(value) ? nil : ["\(level) (at \(value))"]
        }
    }

    /// Adds a probe for work `part` has due but not yet taken up.
    public func watch(_ part: String, _ probe: @escaping Probe) {
        guard tracking else { return }
        probes.withLock { $0.append((part, probe)) }
    }

    /// The gateway's events up to `sequence` of `session` were handed over to the server (queued
    /// for ingestion, which reports on its own).
    public func handedOver(session: String, sequence: Int) {
        guard tracking else { return }
        change { state in
            if sequence > state.gateway[session] ?? -1 { state.gateway[session] = sequence }
        }
    }

    /// The last sequence number of each gateway session whose events were handed over.
    public var gatewayPositions: [String: Int] { state.withLock { $0.gateway } }

    /// Returns once the server has taken in the gateway events up to each `session: sequence`
    /// given (the emulator's dispatches); throws `Unsettled` past `timeout`.
    public func gatewayCaughtUp(_ positions: [String: Int], within timeout: Duration = .seconds(120)) async throws {
        try await waitUntil(timeout) { state in
            let behind = positions.filter { session, sequence in (state.gateway[session] ?? -1) < sequence }
            return behind.isEmpty ? nil : behind.map { "gateway session \($0.key): handed over \(state.gateway[$0.key].map(String.init) ?? "nothing") of \($0.value)" }
        }
    }

    /// The gateway sessions whose events were handed over so far.
    public var gatewaySessions: Set<String> { state.withLock { Set($0.gateway.keys) } }

    /// Returns once a gateway session not in `known` has handed over its first events.
    public func gatewaySession(notIn known: Set<String>, within timeout: Duration = .seconds(120)) async throws {
        try await waitUntil(timeout) { state in
            Set(state.gateway.keys).subtracting(known).isEmpty ? ["a new gateway session (had \(known.count))"] : nil
        }
    }

    /// Returns once the gateway's first session has handed over its first events.
    public func gatewayStarted(within timeout: Duration = .seconds(120)) async throws {
        try await waitUntil(timeout) { state in state.gateway.isEmpty ? ["the gateway's first session"] : nil }
    }

    /// Returns once no part has work queued or under way and no probe finds work due; throws
    /// `Unsettled` naming what is still busy when `timeout` passes first.
    public func settled(within timeout: Duration = .seconds(120)) async throws {
        precondition(tracking, "settled() on untracked background work would return at once")
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw Unsettled(busy: state.withLock { $0.busy }, timeout: timeout) }
            try await waitUntil(remaining, reportedTimeout: timeout) { state in state.busy.isEmpty ? nil : state.busy }
            let generation = state.withLock { $0.generation }
            var found: [String] = []
            for (part, probe) in probes.withLock({ $0 }) {
                if await probe() { found.append("\(part) (due, not taken up)") }
            }
            let unclaimed = found
            if unclaimed.isEmpty, state.withLock({ $0.generation }) == generation { return }
            if !unclaimed.isEmpty {
                // A nudged part reports when it takes the work up; wait for that move.
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { throw Unsettled(busy: unclaimed, timeout: timeout) }
                try await waitUntil(left, reportedTimeout: timeout) { state in state.generation == generation ? unclaimed : nil }
            }
        }
    }

    /// Waits until `blocked` returns nil (it returns what is still in the way), woken by every report.
    private func waitUntil(
        _ timeout: Duration, reportedTimeout: Duration? = nil, _ blocked: (State) -> [String]?
    ) async throws {
        let signal = WakeSignal()
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            state.waiters[state.nextWaiter] = signal
            return state.nextWaiter
        }
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: id) } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while let busy = state.withLock({ blocked($0) }) {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw Unsettled(busy: busy, timeout: reportedTimeout ?? timeout) }
            _ = await signal.wait(upTo: remaining)
            try Task.checkCancellation()
        }
    }

    private func change(_ body: (inout State) -> Void) {
        let waiters = state.withLock { state in
            body(&state)
            state.generation &+= 1
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.signal() }
    }
}
