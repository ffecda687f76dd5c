import Foundation
import Synchronization

/// Discord's 64-bit ids: milliseconds since the Discord epoch in the top 42 bits, then worker,
/// process and a per-millisecond increment, so ids sort by creation time as Discord's do.
public struct Snowflake: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let discordEpochMilliseconds: UInt64 = 1_420_070_400_000

    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public init?(_ string: String) {
        guard let value = UInt64(string) else { return nil }
        self.rawValue = value
    }

    public var description: String { String(rawValue) }

    public var date: Date {
        let milliseconds = (rawValue >> 22) + Self.discordEpochMilliseconds
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    public static func < (lhs: Snowflake, rhs: Snowflake) -> Bool { lhs.rawValue < rhs.rawValue }
}

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
