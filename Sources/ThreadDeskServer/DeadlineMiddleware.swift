import Deadlines
import Hummingbird
import ServiceLifecycle

/// Gives every request one deadline that all of its waits honour (the per-user lock, Discord,
/// APNs, the database), names the request to the wait tracker when one is on, and at graceful
/// shutdown gives in-flight requests `drain` to finish before their work is cancelled — so they
/// still answer (503) before the server closes their connections.
struct DeadlineMiddleware: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    let timeout: Duration
    let drain: Duration
    let waits: WaitTracker?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await WaitTracker.$current.withValue(waits) {
            try await WaitTracker.run(job: "\(request.method) \(request.uri.path)") {
                try await Deadline.within(timeout) {
                    try await withoutActuallyEscaping(next) { next in
                        try await cancellableAtShutdown { try await next(request, context) }
                    }
                }
            }
        }
    }

    /// Runs `work` in a task of its own, cancelled `drain` after graceful shutdown begins (and
    /// when the request's own task is cancelled); the answer it then gives still goes out.
    private func cancellableAtShutdown(_ work: @escaping () async throws -> Response) async throws -> Response {
        nonisolated(unsafe) let work = work
        let task = Task { try await work() }
        let drain = self.drain
        return try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await task.value
            } onGracefulShutdown: {
                Task {
                    try? await Task.sleep(for: drain)
                    task.cancel()
                }
            }
        } onCancel: {
            task.cancel()
        }
    }
}
