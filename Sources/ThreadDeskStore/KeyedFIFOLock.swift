import Deadlines
import Synchronization

/// Mutual exclusion per key, granted in arrival order. Holders of different keys never wait on
/// each other; an unused key costs nothing.
///
/// No one waits forever: a waiter gives up when its timeout passes (`DeadlineExceeded`) or its
/// task is cancelled (`CancellationError`), and leaves the queue without disturbing the others.
public final class KeyedFIFOLock<Key: Hashable & Sendable>: Sendable {
    private struct Waiter {
        var ticket: UInt64
        var continuation: CheckedContinuation<Void, any Error>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var nextTicket: UInt64 = 0
        /// A key is present while held; its array is the queue behind the holder.
        var queues: [Key: [Waiter]] = [:]
    }

    private let state = Mutex(State())
    /// How long a waiter queues when no deadline of the caller's is sooner.
    public let defaultTimeout: Duration

    public init(defaultTimeout: Duration = .seconds(30)) {
        self.defaultTimeout = defaultTimeout
    }

    /// Runs `body` holding `key`. The wait for the lock ends at the current `Deadline` or after
    /// `defaultTimeout`, whichever is sooner.
    public func withLock<T>(
        _ key: Key, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        try await WaitTracker.track("waiting for the lock of \(key)") {
            try await acquire(key, timeout: Deadline.capping(defaultTimeout))
        }
        defer { release(key) }
        return try await WaitTracker.track("holding the lock of \(key)", isolation: isolation, body)
    }

    private func acquire(_ key: Key, timeout: Duration) async throws {
        let ticket = state.withLock { state in
            state.nextTicket += 1
            return state.nextTicket
        }
        try await suspendCancellably { continuation in
            let acquired = state.withLock { state in
                if state.queues[key] == nil {
                    state.queues[key] = []
                    return true
                }
                state.queues[key]!.append(Waiter(ticket: ticket, continuation: continuation))
                return false
            }
            if acquired { return continuation.resume() }
            let timer = Task { [weak self] in
                guard (try? await cancellableSleep(for: timeout)) != nil else { return }
                self?.abandon(key, ticket, DeadlineExceeded("waiting for the lock of \(key)", after: timeout))
            }
            let queued = state.withLock { state in
                guard let index = state.queues[key]?.firstIndex(where: { $0.ticket == ticket }) else { return false }
                state.queues[key]![index].timer = timer
                return true
            }
            if !queued { timer.cancel() }
        } abandon: { [weak self] in
            self?.abandon(key, ticket, CancellationError())
        }
    }

    /// Takes a waiter out of the queue and fails it; does nothing if it was granted meanwhile.
    private func abandon(_ key: Key, _ ticket: UInt64, _ error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.queues[key]?.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return state.queues[key]!.remove(at: index)
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(throwing: error)
    }

    /// Hands the lock straight to the oldest waiter, so nobody can overtake it.
    private func release(_ key: Key) {
        let next = state.withLock { state -> Waiter? in
            guard var queue = state.queues[key], !queue.isEmpty else {
                state.queues[key] = nil
                return nil
            }
            let next = queue.removeFirst()
            state.queues[key] = queue
            return next
        }
        next?.timer?.cancel()
        next?.continuation.resume()
    }

    /// Keys held or waited on right now (for tests and metrics).
    public var activeKeys: Int { state.withLock { $0.queues.count } }

    /// Tasks queued behind the holder of `key`.
    public func waiting(for key: Key) -> Int { state.withLock { $0.queues[key]?.count ?? 0 } }
}
