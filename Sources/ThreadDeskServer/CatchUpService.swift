import Deadlines
import ServiceLifecycle

/// Runs every catch-up in a task of its own — the ones asked for (gateway gaps) and, as a safety
/// net, one every `interval` whatever the gateway said — so a long catch-up is bounded by its
/// Discord calls' budgets, not by the deadline of whichever request asked first.
struct CatchUpService: Service, CustomStringConvertible {
    let service: SupportService
    let interval: Duration

    var description: String { "CatchUpService(every \(interval))" }

    func run() async throws {
        let gate = service.catchUps
        // Only cancellation (graceful shutdown) ends the loop.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await withTimeout(interval, "a catch-up request") {
                        for await _ in gate.wakeUps { return }
                    }
                } catch is DeadlineExceeded {
                    gate.request("timer")
                }
                while let reason = gate.startRun() {
                    await WaitTracker.$current.withValue(service.waits) {
                        await WaitTracker.run(job: "catch-up (\(reason))") { await service.runCatchUp(reason: reason) }
                    }
                    gate.finishRun()
                }
            }
        }
    }
}
