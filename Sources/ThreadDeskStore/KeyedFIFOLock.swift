import Deadlines
import Synchronization

/// Mutual exclusion per key, granted in arrival order. Holders of different keys never wait on
/// each other; an unused key costs nothing. With `holders` above 1 it is a counting semaphore per
/// key: up to that many run at once, the rest queue in arrival order.
///
/// No one waits forever: a waiter gives up when its timeout passes (`DeadlineExceeded`) or its
/// task is cancelled (`CancellationError`), and leaves the queue without disturbing the others.
public final class KeyedFIFOLock<Key: Hashable & Sendable>: Sendable {
    private struct Waiter {
        var ticket: UInt64
        var continuation: CheckedContinuation<Void, any Error>
        var timer: Task<Void, Never>?
    }

    private struct Entry {
        var holders = 0
        /// The queue behind the holders.
        var waiters: [Waiter] = []
    }

    private struct State {
        var nextTicket: UInt64 = 0
        /// A key is present while held.
        var entries: [Key: Entry] = [:]
    }

    private let state = Mutex(State())
    /// How long a waiter queues when no deadline of the caller's is sooner.
    public let defaultTimeout: Duration
    /// How many may hold one key at once.
    public let holders: Int
    /// How waits and timeouts name a key (they reach logs): a user's lock is named by the user's
    /// fingerprint, never the id, which on the legacy routes is a credential.
    private let name: @Sendable (Key) -> String

    /// Told after every change of who holds or waits (tests await a queue's state with it).
    private let observer: (@Sendable () -> Void)?

    public init(
        defaultTimeout: Duration = .seconds(30), holders: Int = 1, name: @escaping @Sendable (Key) -> String = { "\($0)" },
        observer: (@Sendable () -> Void)? = nil
    ) {
        self.observer = observer
        precondition(holders > 0)
        self.defaultTimeout = defaultTimeout
        self.holders = holders
        self.name = name
    }

    /// Runs `body` holding `key`. The wait for the lock ends at the current `Deadline` or after
    /// `defaultTimeout`, whichever is sooner.
    public func withLock<T>(
        _ key: Key, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        try await WaitTracker.track("waiting for the lock of \(name(key))") {
            try await acquire(key, timeout: Deadline.capping(defaultTimeout))
        }
        defer { release(key) }
        return try await WaitTracker.track("holding the lock of \(name(key))", isolation: isolation, body)
    }

    private func acquire(_ key: Key, timeout: Duration) async throws {
        let ticket = state.withLock { state in
            state.nextTicket += 1
            return state.nextTicket
        }
        try await suspendCancellably { continuation in
            let acquired = state.withLock { state in
                var entry = state.entries[key] ?? Entry()
                defer { state.entries[key] = entry }
                if entry.holders < holders && entry.waiters.isEmpty {
                    entry.holders += 1
                    return true
                }
                entry.waiters.append(Waiter(ticket: ticket, continuation: continuation))
                return false
            }
            observer?()
            if acquired { return continuation.resume() }
            // The waiter's deadline. A task of its own: the waiter is a continuation, not a task
            // that could run a child; it is cancelled as soon as the waiter gets the lock.
            let timer = Task { [weak self] in
                guard (try? await cancellableSleep(for: timeout)) != nil else { return }
                guard let self else { return }
                self.abandon(key, ticket, DeadlineExceeded("waiting for the lock of \(self.name(key))", after: timeout))
            }
            let queued = state.withLock { state in
                guard let index = state.entries[key]?.waiters.firstIndex(where: { $0.ticket == ticket }) else { return false }
                state.entries[key]!.waiters[index].timer = timer
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
            guard let index = state.entries[key]?.waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return state.entries[key]!.waiters.remove(at: index)
        }
        observer?()
        waiter?.timer?.cancel()
        waiter?.continuation.resume(throwing: error)
    }

    /// Hands the lock straight to the oldest waiter, so nobody can overtake it.
    private func release(_ key: Key) {
        let next = state.withLock { state -> Waiter? in
            guard var entry = state.entries[key] else { return nil }
            defer { state.entries[key] = entry.holders == 0 ? nil : entry }
            guard !entry.waiters.isEmpty else {
                entry.holders -= 1
                return nil
            }
            return entry.waiters.removeFirst()
        }
        observer?()
        next?.timer?.cancel()
        next?.continuation.resume()
    }

    /// Keys held or waited on right now (for tests and metrics).
    public var activeKeys: Int { state.withLock { $0.entries.count } }

    /// Tasks queued behind the holders of `key`.
    public func waiting(for key: Key) -> Int { state.withLock { $0.entries[key]?.waiters.count ?? 0 } }

    /// Tasks holding `key` now.
    public func holding(_ key: Key) -> Int { state.withLock { $0.entries[key]?.holders ?? 0 } }
}
