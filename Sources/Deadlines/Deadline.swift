/// The moment by which the current piece of work (one HTTP request, one gateway event) must be
/// done. It travels as a task-local, so every await beneath it — a per-user lock, a Discord or
/// APNs call, a database query — can give up in time instead of waiting forever.
public enum Deadline {
    @TaskLocal public static var current: ContinuousClock.Instant?

    /// Runs `body` with a deadline `duration` from now, or the enclosing one if that is sooner.
    public static func within<T>(
        _ duration: Duration, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        let proposed = ContinuousClock.now.advanced(by: duration)
        let deadline = current.map { min($0, proposed) } ?? proposed
        return try await $current.withValue(deadline, operation: body, isolation: isolation)
    }

    /// What is left of the current deadline, or nil when there is none.
    public static var remaining: Duration? {
        current.map { ContinuousClock.now.duration(to: $0) }
    }

    /// `budget`, cut down to what is left of the current deadline (never below zero).
    public static func capping(_ budget: Duration) -> Duration {
        guard let remaining else { return budget }
        return max(.zero, min(budget, remaining))
    }
}

/// A wait ran out of time. `what` names the wait, for the log line and the client's message.
public struct DeadlineExceeded: Error, CustomStringConvertible, Sendable {
    public let what: String
    public let after: Duration

    public init(_ what: String, after: Duration) {
        self.what = what
        self.after = after
    }

    public var description: String { "\(what) did not finish within \(after)" }
}

/// Runs `operation`, cancelling it when `timeout` passes first and then throwing
/// `DeadlineExceeded`. The operation must honour cancellation: this waits for it to end.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: @autoclosure () -> String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard timeout > .zero else { throw DeadlineExceeded(what(), after: timeout) }
    let outcome = try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await cancellableSleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
    guard let outcome else { throw DeadlineExceeded(what(), after: timeout) }
    return outcome
}

/// Waits for `task` to finish; once `timeout` has passed, cancels it and waits for that. Used to
/// drain work at shutdown: it waits even when the caller is itself being cancelled.
public func drain<T: Sendable>(_ task: Task<T, Never>, within timeout: Duration) async {
    let timer = Task {
        guard (try? await cancellableSleep(for: timeout)) != nil else { return }
        task.cancel()
    }
    _ = await task.value
    timer.cancel()
}

/// Suspends until the continuation handed to `register` is resumed. `register` resumes it at
/// once or stores it for later; cancellation — before or after `register` — calls `abandon`,
/// which must resume it with an error if it is still stored, and otherwise do nothing.
public func suspendCancellably(
    register: (CheckedContinuation<Void, any Error>) -> Void, abandon: @escaping @Sendable () -> Void
) async throws {
    try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            register(continuation)
            // A cancellation that came before `register` stored anything found nothing to abandon.
            if Task.isCancelled { abandon() }
        }
    } onCancel: {
        abandon()
    }
}
