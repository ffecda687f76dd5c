import Deadlines
import Hummingbird
import ServiceLifecycle
import Synchronization

/// Gives every request one deadline that all of its waits honour (the per-user lock, Discord,
/// APNs, the database), names the request to the wait tracker when one is on, and at graceful
/// shutdown gives in-flight requests `drain` to finish before their work is cancelled — so they
/// still answer (503) before the server closes their connections.
struct DeadlineMiddleware: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    let timeout: Duration
    /// The stop's drain, counted from when the stop began (shared with the desk's interactions).
    let drain: ShutdownDrain
    let waits: WaitTracker?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let (waits, timeout) = (self.waits, self.timeout)
        return try await withoutActuallyEscaping(next) { escapable in
            // Awaited below before `handle` returns: it never outlives the call.
            nonisolated(unsafe) let next = escapable
            // The request's own task starts before anything else: the connection's task, which
            // lives as long as the connection, only waits for it (a Swift task keeps the memory
            // of the deepest stack it ever had until it ends).
            return try await drain.cancellingAtItsEnd {
                try await WaitTracker.$current.withValue(waits) {
                    try await WaitTracker.run(job: Self.job(request)) {
                        try await Deadline.within(timeout) { try await next(request, context) }
                    }
                }
            }
        }
    }

    /// How the wait tracker (and so the logs) name a request: its path, except where the legacy
    /// routes carry the user id, their only credential, in it.
    static func job(_ request: Request) -> String {
        let path = request.uri.path
        for route in ["/messages/", "/upload-diagnostics/"] where path.hasPrefix(route) { return "\(request.method) \(route)…" }
        return "\(request.method) \(path)"
    }
}
