import Synchronization

/// Turns in fixed windows, the way Discord counts a bucket: the first turn after a window has
/// passed opens a new one; `limit` turns are given in it while it is young enough that a request
/// reaches Discord before the window closes (`window - lateness`), and the next window opens
/// only once Discord's has surely closed (`window + lateness` after the first turn, which reached
/// Discord at most `lateness` after it was given). Requests that reach Discord at most `lateness`
/// after their turn therefore never make more than `limit` in one of Discord's windows, however
/// the processes taking turns interleave.
public enum TurnWindow {
    /// The window's state after a turn is asked for `age` after the window opened with `used`
    /// turns given, by a process that knows the bucket as `limit` in `window` (a process that has
    /// not heard Discord's headers yet asks as 1 in a second). The row remembers the longest
    /// window any process knew (`known`): a process that knows less never closes a window early.
    /// Returns the turns given, whether a new window opens now, the window to remember, and the
    /// wait when no turn is given.
    public static func decide(age: Duration, used: Int, known: Duration, limit: Int, window: Duration, lateness: Duration)
        -> (used: Int, opens: Bool, known: Duration, wait: Duration?)
    {
        let known = max(known, window)
        // A clock stepped back makes no wait longer than a whole window.
        let age = max(age, .zero)
        if age >= known + lateness { return (1, true, known, nil) }
        if age < known - lateness, used < max(1, limit) { return (used + 1, false, known, nil) }
        return (used, false, known, known + lateness - age)
    }
}

/// `TurnWindow`s in process memory, for the stores that serve from one process (memory, SQLite).
public final class TurnWindows: Sendable {
    private struct Opened {
        var at: ContinuousClock.Instant
        var used: Int
        var known: Duration
    }

    private let windows = Mutex<[String: Opened]>([:])

    public init() {}

    /// Nil when a turn is taken, else how long until one may be.
    public func take(_ key: String, limit: Int, window: Duration, lateness: Duration, now: ContinuousClock.Instant = .now) -> Duration? {
        windows.withLock { windows in
            // Windows long closed are the same as none: forgotten, so the keys stay few.
            if windows.count > 1000 { windows = windows.filter { $0.value.at.duration(to: now) < $0.value.known + lateness } }
            guard let opened = windows[key] else {
                windows[key] = Opened(at: now, used: 1, known: window)
                return nil
            }
            let decided = TurnWindow.decide(
                age: opened.at.duration(to: now), used: opened.used, known: opened.known, limit: limit, window: window, lateness: lateness)
            windows[key] = Opened(at: decided.opens ? now : opened.at, used: decided.used, known: decided.known)
            return decided.wait
        }
    }
}
