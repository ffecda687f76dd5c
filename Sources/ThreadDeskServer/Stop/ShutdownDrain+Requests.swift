import ServiceLifecycle
import Synchronization

extension ShutdownDrain {
    /// Runs `work` (a request) in a task of its own, which cancels itself once the drain (counted
    /// from when the stop began) is over; the answer it then gives still goes out. The connection's
    /// task only awaits it: every frame here stays in that task's memory for as long as the connection is open (an
    /// event stream: an hour), so no cancellation handler or shutdown handler is set up on it
    /// (the request's deadline bounds the wait).
    func cancellingAtItsEnd<Result: Sendable>(_ work: @escaping () async throws -> Result) async throws -> Result {
        nonisolated(unsafe) let work = work
        let drain = self
        let handle = TaskHandle<Result>()
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
private final class TaskHandle<Result: Sendable>: Sendable {
    private let state = Mutex<(task: Task<Result, any Error>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<Result, any Error>) {
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
