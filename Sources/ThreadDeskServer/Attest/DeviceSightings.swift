import Foundation
import Synchronization

/// When this process last noted each device's use. Past `capacity` devices, those noted longer
/// than a period ago go first, then the oldest half (noted once more when they come back).
final class DeviceSightings: Sendable {
    private let seen = Mutex<[String: Date]>([:])
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Whether `device` was noted less than `seconds` before `now` (nothing is noted).
    func seenRecently(_ device: String, now: Date, within seconds: TimeInterval) -> Bool {
        seen.withLock { Self.isRecent($0[device], now: now, within: seconds) }
    }

    private static func isRecent(_ last: Date?, now: Date, within seconds: TimeInterval) -> Bool {
        guard let last else { return false }
        return now.timeIntervalSince(last) < seconds && now >= last
    }

    /// Whether `device` is due a note at `now` (then it counts as noted).
    func due(_ device: String, now: Date, every seconds: TimeInterval) -> Bool {
        seen.withLock { seen in
            if Self.isRecent(seen[device], now: now, within: seconds) { return false }
            if seen[device] == nil, seen.count >= capacity {
                seen = seen.filter { Self.isRecent($0.value, now: now, within: seconds) }
                if seen.count >= capacity {
                    let cutoff = seen.values.sorted()[seen.count / 2]
                    seen = seen.filter { $0.value > cutoff }
                }
            }
            seen[device] = now
            return true
        }
    }

    /// Forgets `device`'s note (the store did not take it: the next request tries again).
    func forget(_ device: String) {
        _ = seen.withLock { $0.removeValue(forKey: device) }
    }

    var count: Int { seen.withLock { $0.count } }
}
