import Synchronization

/// Mutual exclusion per key, granted in arrival order. Holders of different keys never wait on
/// each other; an unused key costs nothing.
public final class KeyedFIFOLock<Key: Hashable & Sendable>: Sendable {
    private let waiters = Mutex<[Key: [CheckedContinuation<Void, Never>]]>([:])

    public init() {}

    public func withLock<T>(_ key: Key, _ body: () async throws -> T) async rethrows -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: Key) async {
        await withCheckedContinuation { continuation in
            let acquired = waiters.withLock { waiters in
                if waiters[key] == nil {
                    waiters[key] = []
                    return true
                }
                waiters[key]!.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    /// Hands the lock straight to the oldest waiter, so nobody can overtake it.
    private func release(_ key: Key) {
        let next = waiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
            guard var queue = waiters[key], !queue.isEmpty else {
                waiters[key] = nil
                return nil
            }
            let next = queue.removeFirst()
            waiters[key] = queue
            return next
        }
        next?.resume()
    }

    /// Keys held or waited on right now (for tests and metrics).
    public var activeKeys: Int { waiters.withLock { $0.count } }

    /// Tasks queued behind the holder of `key`.
    public func waiting(for key: Key) -> Int { waiters.withLock { $0[key]?.count ?? 0 } }
}
