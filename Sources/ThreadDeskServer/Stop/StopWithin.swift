import Logging
import ServiceLifecycle

/// A service whose stop may take at most `limit` (read when the stop reaches it): past that it is
/// cancelled and, if it still runs, left to the process's exit. For a part whose stop waits on
/// others: the store's pool closes once every connection is back, and a query that never returns
/// one held a replica of 16,667 streams past its grace until the process deadline ended it
/// (status 1; `bench/RESULTS.md`, issue 62). What it ran is ended by the exit either way; the
/// process must still be out within its grace.
struct StopWithin: Service, CustomStringConvertible {
    let service: any Service
    let limit: @Sendable () -> Duration
    let time: ServerTime
    let logger: Logger

    var description: String { StopRecord.name(of: service) }

    private enum Event: Sendable {
        case ended((any Error)?)
        case stopping
        case timeUp
    }

    func run() async throws {
        let (events, feed) = AsyncStream<Event>.makeStream()
        defer { feed.finish() }
        // A task of its own, so that it can be left running; it keeps the graceful-shutdown
        // manager (a task-local), so the service hears of the stop as it would in place.
        let running = Task {
            do {
                try await service.run()
                feed.yield(.ended(nil))
            } catch {
                feed.yield(.ended(error))
            }
        }
        var timer: Task<Void, Never>?
        var granted = Duration.zero
        defer { timer?.cancel() }
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                // Ends with the service, or when its time is up; a cancelled wait (the group's
                // cancellation) ends it too, and the service with it as far as it lets itself be.
                for await event in events {
                    switch event {
                    case .ended(let error?):
                        throw error
                    case .ended(nil):
                        return
                    case .stopping:
                        guard timer == nil else { continue }
                        granted = limit()
                        timer = Task { [granted] in
                            guard (try? await time.sleep(for: granted)) != nil else { return }
                            feed.yield(.timeUp)
                        }
                    case .timeUp:
                        running.cancel()
                        logger.notice(
                            "A part did not stop in its time; the process's exit ends it",
                            metadata: ["service": "\(description)", "seconds": "\(StopRecord.seconds(granted))"])
                        return
                    }
                }
            } onGracefulShutdown: {
                feed.yield(.stopping)
            }
        } onCancel: {
            running.cancel()
        }
    }
}
