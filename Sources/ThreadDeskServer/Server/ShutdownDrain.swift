import Synchronization

/// The time the work under way at a graceful stop (requests, slash commands, draft clicks) has
/// to finish, counted once from the moment the stop began. ServiceLifecycle tells services of a
/// stop one after another, each once the one before has ended, so a drain counted from when each
/// one heard would add up past the grace; counted from the first to hear, they share it.
final class ShutdownDrain: Sendable {
    /// How long after the stop began the work under way may go on.
    let drain: Duration
    private let time: ServerTime
    /// The server clock's reading when the first of its users heard of the stop.
    private let began = Mutex<Duration?>(nil)

    init(_ drain: Duration, time: ServerTime) {
        (self.drain, self.time) = (drain, time)
    }

    /// Notes that the stop began now, unless it was noted before.
    func begin() {
        let now = time.elapsed()
        began.withLock { began in if began == nil { began = now } }
    }

    /// What is left of the drain: all of it before the stop began, never below zero.
    var left: Duration {
        guard let began = began.withLock({ $0 }) else { return drain }
        return max(.zero, drain - (time.elapsed() - began))
    }

    /// Sleeps until the drain is over (the stop noted as begun now if it was not yet).
    func sleep() async throws {
        begin()
        try await time.sleep(for: left)
    }
}
