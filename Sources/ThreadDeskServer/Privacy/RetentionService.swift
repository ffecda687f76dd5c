import Deadlines
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskCore
import ThreadDeskStore

/// Erases users inactive longer than `RETENTION_DAYS`, exactly as `DELETE /v1/me` does (their
/// threads settled as `USER_DELETION` says, then everything of theirs in the store). Runs at start
/// and then every `interval` on the server's clock, asleep in between; one replica at a time (a
/// job lock of the store). A user that cannot be erased now (Discord down) is tried again next round.
struct RetentionService: Service, CustomStringConvertible {
    let store: any UserErasure & JobLocks
    let eraser: UserEraser
    let retention: Duration
    let interval: Duration
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime
    /// Users read from the store at a time.
    var batch = 100
    /// How long erasing one user may take (its Discord calls included).
    var perUser: Duration = .seconds(60)

    /// The settled signal's account (tests): a round is due from the start.
    private let work: BackgroundWork
    static let workName = "retention"

    init(
        store: any UserErasure & JobLocks, eraser: UserEraser, retention: Duration, interval: Duration, metrics: ServerMetrics,
        logger: Logger, time: ServerTime, work: BackgroundWork = .untracked
    ) {
        (self.store, self.eraser, self.retention, self.interval, self.metrics, self.logger, self.time) =
            (store, eraser, retention, interval, metrics, logger, time)
        self.work = work
        work.begin(Self.workName)
    }

    var description: String { "RetentionService(erases users inactive \(retention))" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await round()
                guard (try? await work.endSleepThenBegin(Self.workName, for: interval, on: time)) != nil else { return }
            }
        }
    }

    /// Erases every user inactive since the cutoff, a batch at a time; returns how many went (nil
    /// when another replica runs the job now).
    @discardableResult
    func round() async -> Int? {
        let cutoff = time.now().addingTimeInterval(-(retention / .seconds(1)))
        do {
            let erased = try await store.exclusively("retention") { try await eraseInactive(before: cutoff) }
            if let erased {
                metrics.retentionRound(outcome: erased.failed == 0 ? "done" : "failed")
                if erased.count > 0 { logger.info("Erased inactive users", metadata: ["count": "\(erased.count)"]) }
            }
            return erased?.count
        } catch {
            metrics.retentionRound(outcome: "failed")
            logger.warning("Could not look for inactive users; the next round tries again", metadata: ["error": "\(error)"])
            return 0
        }
    }

    private func eraseInactive(before cutoff: Date) async throws -> (count: Int, failed: Int) {
        var erased = 0
        var failed = 0
        /// Users listed but left this round (failed, or active again): the next batch is read past them.
        var passed: Set<UserID> = []
        while !Task.isCancelled {
            let users = try await store.inactiveUsers(before: cutoff, limit: batch + passed.count).filter { !passed.contains($0.id) }
            if users.isEmpty { break }
            for user in users {
                do {
                    if try await Deadline.within(perUser, { try await eraser.erase(user.id, reason: .retention, inactiveSince: cutoff) }) {
                        erased += 1
                    } else {
                        passed.insert(user.id)
                    }
                } catch {
                    failed += 1
                    passed.insert(user.id)
                    logger.warning(
                        "Could not erase an inactive user; the next round tries again", metadata: ["user": "\(user.id.logValue)", "error": "\(error)"])
                }
            }
        }
        return (erased, failed)
    }
}
