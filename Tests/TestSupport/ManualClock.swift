import Synchronization

/// A clock that moves only when a test says so, so rate-limit waits are checked without sleeping.
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [(id: Int, deadline: Instant, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    private let state = Mutex(State())
    /// Moves with every sleeper that comes or goes (and whatever else a test bumps it for: a
    /// connection's status), so a test waits for the clock's sleepers without polling.
    public let changes = Watched(0)
    public init() {}

    public var minimumResolution: Duration { .zero }
    public var now: Instant { state.withLock { $0.now } }
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }
    /// How long from now each sleeping task sleeps, soonest first.
    public var sleepsLeft: [Duration] {
        state.withLock { state in state.sleepers.map { state.now.duration(to: $0.deadline) }.sorted() }
    }
    /// The earliest moment a task sleeps until, or nil when none sleeps.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Sleeps until the test moves the clock past `deadline`; cancellation ends the sleep at once
    /// (with `CancellationError`, as the system clocks' sleeps do), so shutting down never waits on the clock.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Once queued, the continuation is the clock's or the cancellation's to resume, not this.
                enum Outcome { case due, cancelled, queued }
                let outcome = state.withLock { state -> Outcome in
                    if deadline <= state.now { return .due }
                    if Task.isCancelled { return .cancelled }
                    state.sleepers.append((id, deadline, continuation))
                    return .queued
                }
                switch outcome {
                case .due: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queued: changes.update { $0 += 1 }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index).continuation
            }
            sleeper?.resume(throwing: CancellationError())
            changes.update { $0 += 1 }
        }
    }

    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        due.forEach { $0.resume() }
        changes.update { $0 += 1 }
    }

    /// Moves the clock to the earliest deadline any task sleeps until, waking the tasks due then;
    /// throws (failing the test) when nothing sleeps, since then nothing would ever move on.
    public func advanceToNextDeadline() throws {
        guard let next = nextDeadline else { throw NobodySleeps() }
        advance(by: max(.zero, now.duration(to: next)))
    }

    /// `advanceToNextDeadline()` found no task sleeping on the clock.
    public struct NobodySleeps: Error, CustomStringConvertible {
        public var description: String { "no task sleeps on the manual clock: advancing it would wake nothing" }
    }

    /// Lets other tasks run until `count` of them sleep on this clock; throws (failing the test)
    /// when they have not within `timeout` of real time, since a test that advances a clock
    /// nobody waits on checks nothing. The timeout only bounds a broken test: it is generous, so
    /// a busy machine does not fail a working one.
    public func waitForSleepers(_ count: Int, timeout: Duration = .seconds(120)) async throws {
        try await changes.wait(for: "\(count) task(s) sleeping on the manual clock (\(sleeperCount) are)", timeout: timeout) { _ in
            sleeperCount >= count
        }
    }

    /// Runs `operation` to its end, moving the clock to each deadline it sleeps until (a backoff,
    /// a rate-limit window) as soon as it sleeps: its waits pass at once, however long they are,
    /// and a budget measured on this clock runs out only by those waits. For an operation that is
    /// the only one sleeping on this clock. Throws when, for `timeout` of real time, the operation
    /// neither ends nor sleeps.
    @discardableResult
    public func drive<T: Sendable>(
        timeout: Duration = .seconds(120), _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let ended = EndFlag()
        let changed = changes
        let task = Task {
            defer {
                ended.set()
                changed.update { $0 += 1 }
            }
            return try await operation()
        }
        do {
            while !ended.isSet {
                try await changes.wait(for: "the operation to end or sleep on the manual clock", timeout: timeout) { _ in
                    ended.isSet || sleeperCount > 0
                }
                if sleeperCount > 0 { try advanceToNextDeadline() }
            }
        } catch {
            task.cancel()
            throw error
        }
        return try await task.value
    }
}

private final class EndFlag: Sendable {
    private let ended = Mutex(false)
    var isSet: Bool { ended.withLock { $0 } }
    func set() { ended.withLock { $0 = true } }
}
