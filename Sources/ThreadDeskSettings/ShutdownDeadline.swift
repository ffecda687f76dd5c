#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ServiceLifecycle
import Synchronization

/// The last word on how long a stop takes. Once the group starts to shut down (a signal, or a
/// service that ended and cancelled the rest) it gives the processes' work `limit` to end, and
/// past it logs what happened and ends the process with status 1.
///
/// ServiceGroup's own cancellation timeout traps instead (`fatalError`: SIGILL, a backtrace that
/// takes seconds to write, a core file), which a replica closing 17,000 event streams on a busy
/// machine reached (bench/RESULTS.md, fourth look). Nothing accepted is lost by ending here: a
/// message is in the store before it is acknowledged, and every wait has its own deadline.
public struct ShutdownDeadline: Service {
    /// How a graceful stop may take, from its start; a cancellation gets `cancelled`.
    let graceful: Duration
    let cancelled: Duration
    let logger: Logger
    /// Sleeps on the clock the deadline runs on (a test drives it).
    let sleep: @Sendable (Duration) async throws -> Void
    /// Ends the process; a test records the call instead.
    let expire: @Sendable () -> Void
    private let timer = Armed()

    public init(
        graceful: Duration, cancelled: Duration, logger: Logger,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await ContinuousClock().sleep(for: $0) },
        expire: @escaping @Sendable () -> Void = ShutdownDeadline.exitProcess
    ) {
        self.graceful = graceful
        self.cancelled = cancelled
        self.logger = logger
        self.sleep = sleep
        self.expire = expire
    }

    public func run() async throws {
        // Last in the group, so the first service told of a graceful shutdown: the deadline starts
        // with the stop. Cancellation (a service failed) ends the wait too, with less time left.
        try? await gracefulShutdown()
        let limit = Task.isCancelled ? cancelled : graceful
        let (sleep, expire, logger) = (self.sleep, self.expire, self.logger)
        // Not a child of the group: the group's cancellation must not cancel the deadline itself.
        timer.arm(
            Task.detached {
                guard (try? await sleep(limit)) != nil, !Task.isCancelled else { return }
                logger.error(
                    "The process did not stop within its shutdown time; ending it now",
                    metadata: ["limit": "\(limit)", "note": "raise SHUTDOWN_GRACE_SECONDS if in-flight work needs longer"])
                expire()
            })
    }

    /// The group ended in time: the deadline is off.
    func disarm() { timer.disarm() }

    private final class Armed: Sendable {
        private let task = Mutex<(task: Task<Void, Never>?, disarmed: Bool)>((nil, false))

        func arm(_ new: Task<Void, Never>) {
            let disarmed = task.withLock { state in
                state.task = new
                return state.disarmed
            }
            if disarmed { new.cancel() }
        }

        func disarm() {
            task.withLock { state in
                state.disarmed = true
                return state.task
            }?.cancel()
        }
    }

    /// Flushes what was written and ends the process at once (no destructors of other threads' work).
    @Sendable public static func exitProcess() {
        fflush(nil)
        _exit(1)
    }
}
