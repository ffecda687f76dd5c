#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ServiceLifecycle
import Synchronization

/// The last word on how long a stop takes. Once the group starts to shut down (a signal, or a
/// service that ended and cancelled the rest) it gives the process's work `graceful` to end (a
/// cancellation: `cancelled`), and past it logs what happened and ends the process with status 1.
///
/// ServiceGroup's own cancellation timeout traps instead (`fatalError`: SIGILL, a backtrace that
/// takes seconds to write, a core file), which a replica closing 17,000 event streams on a busy
/// machine reached (bench/RESULTS.md, fourth look). Nothing accepted is lost by ending here: a
/// message is in the store before it is acknowledged, and every wait has its own deadline.
public struct ShutdownDeadline: Service {
    let graceful: Duration
    let cancelled: Duration
    let logger: Logger
    /// Sleeps on the clock the deadline runs on (a test drives it).
    let sleep: @Sendable (Duration) async throws -> Void
    /// Ends the process after `report` (the log line); a test records the call instead.
    let expire: @Sendable (_ report: () -> Void) -> Void
    private let timer = Timer()

    public init(
        graceful: Duration, cancelled: Duration, logger: Logger,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await ContinuousClock().sleep(for: $0) },
        expire: @escaping @Sendable (_ report: () -> Void) -> Void = ShutdownDeadline.exitProcess
    ) {
        (self.graceful, self.cancelled, self.logger, self.sleep, self.expire) = (graceful, cancelled, logger, sleep, expire)
    }

    public func run() async throws {
        // Last in the group, so the first service told of a graceful shutdown: the deadline starts
        // with the stop. Cancellation (a service failed) ends the wait too, with less time left.
        // A graceful stop that turned into a cancellation before this task ran (its grace already
        // over: a busy machine, a short grace) is still a graceful stop, counted from its start.
        try? await gracefulShutdown()
        let limit = Task.isCancelled && !Task.isShuttingDownGracefully ? cancelled : graceful
        let (sleep, expire, logger, timer) = (self.sleep, self.expire, self.logger, self.timer)
        // Not a child of the group: the group's cancellation must not cancel the deadline itself.
        timer.arm(
            Task.detached {
                guard (try? await sleep(limit)) != nil, timer.fire() else { return }
                expire {
                    logger.error(
                        "The process did not stop within its shutdown time; ending it now",
                        metadata: ["limit": "\(limit)", "note": "raise SHUTDOWN_GRACE_SECONDS if in-flight work needs longer"])
                }
            })
    }

    /// The group ended in time: the deadline is off (unless it fired already).
    func disarm() { timer.disarm() }

    /// Logs, then ends the process at once (no destructors of other threads' work). Should the log
    /// block (a stalled pipe), the alarm ends the process 3 s later all the same.
    @Sendable public static func exitProcess(_ report: () -> Void) {
        alarm(3)
        report()
        fflush(nil)
        _exit(1)
    }

    /// The deadline's task, and whether it may still end the process.
    private final class Timer: Sendable {
        private enum State { case idle, armed(Task<Void, Never>), disarmed, fired }
        private let state = Mutex(State.idle)

        func arm(_ task: Task<Void, Never>) {
            let disarmed = state.withLock { state in
                guard case .idle = state else { return true }
                state = .armed(task)
                return false
            }
            if disarmed { task.cancel() }
        }

        func disarm() {
            let task: Task<Void, Never>? = state.withLock { state in
                switch state {
                case .armed(let task):
                    state = .disarmed
                    return task
                case .idle:
                    state = .disarmed
                    return nil
                case .disarmed, .fired: return nil
                }
            }
            task?.cancel()
        }

        /// Whether the deadline may act: only once, and never after the group ended in time.
        func fire() -> Bool {
            state.withLock { state in
                guard case .armed = state else { return false }
                state = .fired
                return true
            }
        }
    }
}
