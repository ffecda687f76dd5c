import Deadlines
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskStore

/// Forgets the results kept for idempotency keys once they are older than the retention (a client
/// retries within minutes; a retry a day later is a new request), so the store does not grow
/// with every message ever sent. Runs at start and then every quarter of the retention, at most
/// hourly; asleep in between.
struct IdempotencyPruner: Service, CustomStringConvertible {
    let store: any IdempotencyRecords
    let retention: Duration
    let logger: Logger
    let time: ServerTime

    /// The settled signal's account (tests): a round is due from the start.
    private let work: BackgroundWork
    static let workName = "idempotency pruning"

    init(store: any IdempotencyRecords, retention: Duration, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked) {
        (self.store, self.retention, self.logger, self.time, self.work) = (store, retention, logger, time, work)
        work.begin(Self.workName)
    }

    var description: String { "IdempotencyPruner(keeps \(retention))" }

    var interval: Duration { min(retention / 4, .seconds(3600)) }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await prune()
                guard (try? await work.endSleepThenBegin(Self.workName, for: interval, on: time)) != nil else { return }
            }
        }
    }

    func prune() async {
        let cutoff = time.now().addingTimeInterval(-(retention / .seconds(1)))
        do {
            let gone = try await Deadline.within(.seconds(30)) { try await store.pruneResults(before: cutoff) }
            if gone > 0 { logger.info("Forgot old idempotency results", metadata: ["count": "\(gone)"]) }
        } catch {
            logger.warning("Could not prune old idempotency results; the next round tries again", metadata: ["error": "\(error)"])
        }
    }
}
