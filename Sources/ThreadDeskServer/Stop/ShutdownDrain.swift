import Deadlines
import ServiceLifecycle
import Synchronization

/// The time the work under way at a graceful stop (requests, slash commands, draft clicks) has
/// to finish, counted once from the moment the stop began. ServiceLifecycle tells services of a
/// stop one after another, each once the one before has ended, so a drain counted from when each
/// one heard would add up past the grace; counted from the first to hear, they share it.
final class ShutdownDrain: Sendable {
    /// How long after the stop began the work under way may go on.
    let drain: Duration
    private let time: ServerTime
    /// The server clock's reading (`ServerTime.elapsed`) when the first of its users heard of the stop.
    private let began = Mutex<Duration?>(nil)

    init(_ drain: Duration, time: ServerTime) {
        (self.drain, self.time) = (drain, time)
    }

    /// Notes that the stop began now, unless it was noted before.
    func begin() {
        let now = time.elapsed()
        began.withLock { began in if began == nil { began = now } }
    }

    /// When the stop began, on the server clock's `elapsed` scale; nil before.
    var beganAt: Duration? { began.withLock { $0 } }

    /// Whether the stop began: nothing new should start.
    var hasBegun: Bool { began.withLock { $0 != nil } }

    /// When the drain is over, on the server clock's `elapsed` scale; nil before the stop.
    private var end: Duration? { began.withLock { $0 }.map { $0 + drain } }

    /// What is left of the drain: all of it before the stop began, never below zero.
    var left: Duration {
        guard let end else { return drain }
        return max(.zero, end - time.elapsed())
    }

    /// `budget`, cut to what is left of the drain (and a moment more to write down where the
    /// work got to) once the stop began.
    func bounding(_ budget: Duration) -> Duration {
        hasBegun ? min(budget, left + .milliseconds(500)) : budget
    }

    /// Sleeps until the drain is over (the stop noted as begun now if it was not yet).
    func sleep() async throws {
        begin()
        try await time.sleep(untilElapsed: end ?? time.elapsed())
    }

    /// Waits for `signal` at most until the drain is over (the stop noted as begun now if it was
    /// not yet). True when woken.
    func wait(for signal: WakeSignal) async -> Bool {
        begin()
        return await time.wait(for: signal, untilElapsed: end ?? time.elapsed())
    }
}

/// Notes the stop's beginning in the drain as soon as the server's services hear of it: right
/// after the listeners (which begin it themselves when requests are in flight), before the
/// gateway and the features, which each take their turn to stop.
struct ShutdownDrainStart: Service {
    let drain: ShutdownDrain

    func run() async throws {
        try? await gracefulShutdown()
        if Task.isShuttingDownGracefully { drain.begin() }
    }
}
