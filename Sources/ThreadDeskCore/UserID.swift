import Crypto
import Foundation

/// An app user's id as the widget and the store know it. Ids chosen by apps are accepted when they
/// are short, printable ASCII without spaces; ids ThreadDesk generates carry 128 random bits.
public struct UserID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public static let maxLength = 128
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@")

    public init?(_ rawValue: String) {
        guard (1...Self.maxLength).contains(rawValue.count), rawValue.allSatisfy(Self.allowed.contains) else { return nil }
        self.rawValue = rawValue
    }

    /// A fresh, unguessable id: `u_` and 26 base32 characters (130 random bits).
    public static func generate() -> UserID {
        UserID(unchecked: "u_" + Base32.encode(SymmetricKey(size: .init(bitCount: 136)).rawBytes).prefix(26))
    }

    private init(unchecked rawValue: String) { self.rawValue = rawValue }

    /// The reference iOS client's ids: three groups of three characters, `xxx-xxx-xxx`.
    public var isLegacyShaped: Bool {
        let groups = rawValue.split(separator: "-", omittingEmptySubsequences: false)
        return groups.count == 3 && groups.allSatisfy { $0.count == 3 }
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserID(raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a valid user id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension SymmetricKey {
    var rawBytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

/// Lower-case RFC 4648 base32 without padding: case-insensitive ids that survive any URL or log.
enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")

    static func encode(_ bytes: [UInt8]) -> String {
        var output = ""
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return output
    }
}
