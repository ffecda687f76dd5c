import Foundation
import Synchronization

/// This process's memory of when it last let a typing indicator through per thread: the first
/// filter, so an app reporting every keystroke costs a dictionary lookup, not a store write.
/// (The store's token bucket behind it holds the limit across replicas.)
final class TypingGate: Sendable {
    private let interval: Duration
    private let last = Mutex<[String: ContinuousClock.Instant]>([:])
    /// Entries kept before old ones are swept.
    private static let sweepAt = 10_000

    init(interval: Duration) {
        self.interval = interval
    }

    /// True at most once per `interval` per thread.
    func admit(_ thread: String, now: ContinuousClock.Instant = .now) -> Bool {
        last.withLock { last in
            if let previous = last[thread], previous.duration(to: now) < interval { return false }
            if last.count >= Self.sweepAt { last = last.filter { $0.value.duration(to: now) < interval } }
            last[thread] = now
            return true
        }
    }
}
