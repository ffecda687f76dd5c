import Deadlines
import Logging
import ServiceLifecycle

/// The debugging switch `DEBUG_WAIT_SECONDS`: logs every request, lock and call to another
/// process that has waited past the threshold, naming what it waits on and for whom.
struct WaitWatchdog: Service, CustomStringConvertible {
    let tracker: WaitTracker
    let threshold: Duration
    let logger: Logger
    let time: ServerTime

    var description: String { "WaitWatchdog(after \(threshold))" }

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await time.sleep(for: max(.milliseconds(50), threshold / 4))
                for wait in tracker.overdue(threshold: threshold) {
                    logger.warning("Still waiting: \(wait)", metadata: ["wait": "\(wait.what)", "job": "\(wait.job ?? "-")"])
                }
            }
        }
    }
}
