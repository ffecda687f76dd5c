import Deadlines
import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// What wakes the conversations' timers (a wait began, a close was scheduled, an answer came),
/// and the scheduled closes the user's messages cancelled, for the timers to say so in the thread.
/// Made before the mirror (which records into it) and the timers (which read it).
final class LifecycleSignals: Sendable {
    struct Cancelled: Sendable, Hashable {
        var owner: UserID
        var thread: Snowflake
        var due: Date
    }

    let wakeUps = WakeSignal()
    private let cancelled = Mutex<[Cancelled]>([])
    /// At most this many notes of cancelled closes wait (more in a burst: the oldest go unsaid).
    static let cancelledLimit = 1_000

    func wake() { wakeUps.signal() }

    func closeCancelled(_ close: Cancelled) {
        cancelled.withLock { waiting in
            waiting.append(close)
            if waiting.count > Self.cancelledLimit { waiting.removeFirst(waiting.count - Self.cancelledLimit) }
        }
        wakeUps.signal()
    }

    /// The cancelled closes not yet said, taken.
    func takeCancelled() -> [Cancelled] {
        cancelled.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
    }

    var hasCancelled: Bool { cancelled.withLock { !$0.isEmpty } }
}
