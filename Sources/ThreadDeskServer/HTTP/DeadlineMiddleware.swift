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
            return try await cancellableAtShutdown {
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

    /// Runs `work` in a task of its own, which cancels itself once the stop's drain (counted from
    /// when the stop began) is over; the answer it then gives still goes out. The connection's task only awaits it:
    /// every frame here stays in that task's memory for as long as the connection is open (an
    /// event stream: an hour), so no cancellation handler or shutdown handler is set up on it
    /// (the request's deadline bounds the wait).
    private func cancellableAtShutdown(_ work: @escaping () async throws -> Response) async throws -> Response {
        nonisolated(unsafe) let work = work
        let drain = self.drain
        let handle = TaskHandle()
        // Unstructured so the handle can cancel it at the drain's end; awaited right below.
        let task = Task {
            try await withGracefulShutdownHandler {
                try await work()
            } onGracefulShutdown: {
                drain.begin()
                // Unstructured on purpose: a shutdown handler may not wait, and a child awaiting shutdown would cost every request a task.
                Task {
                    try? await drain.sleep()
                    handle.cancel()
                }
            }
        }
        handle.set(task)
        return try await task.value
    }
}

/// A task's handle for code that runs inside it (or before it is known): a cancel asked for
/// before the handle is set is carried out when it is.
private final class TaskHandle: Sendable {
    private let state = Mutex<(task: Task<Response, any Error>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<Response, any Error>) {
        let cancel = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancel { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
