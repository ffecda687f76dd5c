import Foundation

/// Discord's 64-bit ids: milliseconds since the Discord epoch in the top 42 bits, so ids sort by
/// creation time. On the wire they are decimal strings (JSON numbers would lose precision).
public struct Snowflake: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public static let discordEpochMilliseconds: UInt64 = 1_420_070_400_000

    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Only plain decimal digits, as Discord writes them ("+1", " 1" and "01x" are not ids).
    public init?(_ string: some StringProtocol) {
        guard (1...20).contains(string.utf8.count), string.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = UInt64(string)
        else { return nil }
        self.rawValue = value
    }

    /// The smallest id Discord could give at `date`: everything made at or after it sorts after.
    public init(at date: Date) {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        self.rawValue = milliseconds <= Self.discordEpochMilliseconds ? 0 : (milliseconds - Self.discordEpochMilliseconds) << 22
    }

    public var description: String { String(rawValue) }

    /// When Discord made it.
    public var date: Date {
        let milliseconds = (rawValue >> 22) + Self.discordEpochMilliseconds
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    public static func < (lhs: Snowflake, rhs: Snowflake) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Snowflake(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a snowflake: \(text.prefix(40))")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
