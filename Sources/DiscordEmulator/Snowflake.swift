import DiscordREST
import Foundation
import Synchronization

/// Hands out strictly increasing snowflakes, even when the wall clock stalls or steps back.
final class SnowflakeGenerator: Sendable {
    private let last = Mutex<UInt64>(0)
    private let worker: UInt64
    private let process: UInt64

    init(worker: UInt64 = 1, process: UInt64 = 0) {
        self.worker = worker & 0x1F
        self.process = process & 0x1F
    }

    func next(at date: Date = Date()) -> Snowflake {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000)) - Snowflake.discordEpochMilliseconds
        let candidate = (milliseconds << 22) | (worker << 17) | (process << 12)
        return Snowflake(
            last.withLock { last in
                last = max(candidate, last + 1)
                return last
            }
        )
    }
}
