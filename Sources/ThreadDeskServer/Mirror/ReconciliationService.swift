import Deadlines
import Logging
import ServiceLifecycle

/// Runs every reconciliation in a task of its own — the ones asked for (gateway gaps) and one
/// every `interval` whatever the gateway said — never inside an HTTP request or the delivery of
/// gateway events. A run is bounded by its Discord calls' budgets.
struct ReconciliationService: Service, CustomStringConvertible {
    let gate: CatchUpGate
    let feed: FeedState
    let reconciler: Reconciler
    let interval: Duration
    let waits: WaitTracker?
    let logger: Logger
    let time: ServerTime

    var description: String { "ReconciliationService(every \(interval))" }

    func run() async throws {
        // Only cancellation (graceful shutdown) ends the loop.
        await cancelWhenGracefulShutdown {
            // A restart is a gap: facts queued for ingestion when the last process stopped are lost.
            do {
                try await feed.gap()
            } catch {
                logger.warning("Could not record the start as a gap", metadata: ["error": "\(error)"])
            }
            gate.request("start")
            var periodic = true
            while !Task.isCancelled {
                while let reason = gate.startRun() {
                    await WaitTracker.$current.withValue(waits) {
                        await WaitTracker.run(job: "reconciliation (\(reason))") {
                            await reconciler.run(reason: reason, periodic: periodic)
                        }
                    }
                    periodic = false
                }
                if await !gate.wakeUps.wait(upTo: interval, on: time.clock), !Task.isCancelled {
                    gate.request("timer")
                    periodic = true
                }
            }
        }
    }
}
