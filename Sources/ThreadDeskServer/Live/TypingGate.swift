import Foundation
import Synchronization

/// This process's memory of when it last let a typing indicator through per thread: the first
/// filter, so an app reporting every keystroke costs a dictionary lookup, not a store write.
/// (The store's token bucket behind it holds the limit across replicas.)
final class TypingGate: Sendable {
    private let interval: Duration
    /// The time on the server's clock, as a stamp.
    private let now: @Sendable () -> Duration
    private let last = Mutex<[String: Duration]>([:])
    /// Entries kept before old ones are swept.
    private static let sweepAt = 10_000

    init(interval: Duration, time: ServerTime) {
        self.interval = interval
        now = time.elapsed
    }

    /// True at most once per `interval` per thread.
    func admit(_ thread: String) -> Bool {
        let now = now()
        return last.withLock { last in
            if let previous = last[thread], now - previous < interval { return false }
            if last.count >= Self.sweepAt { last = last.filter { now - $0.value < interval } }
            last[thread] = now
            return true
        }
    }
}
