import Crypto
import Foundation

/// An app user's id as the widget and the store know it. Ids chosen by apps are accepted when they
/// are short, printable ASCII without spaces; ids ThreadDesk generates carry 128 random bits.
///
/// One user of one app. The id an app chooses (`local`) is unique within the app only: the same
/// id in two apps is two users. The store keys a user by `rawValue`: the bare id for the
/// `default` app (every row from before there were several apps), `<app>/<id>` for the others
/// (`/` never occurs in an id, so no id of the default app is another app's key).
public struct UserID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The store's key of the user (see above); never shown to the app or its users.
    public let rawValue: String

    public static let maxLength = 128
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@")

    /// An id as an app or an operator writes it: of the `default` app. (Another app's user is
    /// `UserID(app:local:)`; the store's keys are read with `init(storageKey:)`.)
    public init?(_ rawValue: String) {
        guard Self.isValidLocal(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// The user `local` of `app`.
    public init(app: AppID, local: UserID) {
        precondition(local.app == .default, "a local id names no app")
        rawValue = app == .default ? local.rawValue : "\(app.rawValue)/\(local.rawValue)"
    }

    /// A key the store kept (`rawValue`): a bare id, or `<app>/<id>`.
    public init?(storageKey: String) {
        guard let slash = storageKey.firstIndex(of: "/") else {
            self.init(storageKey)
            return
        }
        guard let app = AppID(String(storageKey[..<slash])), app != .default,
            let local = UserID(String(storageKey[storageKey.index(after: slash)...]))
        else { return nil }
        self.init(app: app, local: local)
    }

    private static func isValidLocal(_ raw: String) -> Bool {
        (1...Self.maxLength).contains(raw.count) && raw.allSatisfy(Self.allowed.contains)
    }

    /// The app the user belongs to.
    public var app: AppID {
        guard let slash = rawValue.firstIndex(of: "/") else { return .default }
        return AppID(String(rawValue[..<slash])) ?? .default
    }

    /// The id as the app knows it (what its API answers carry and its `userHash` signs).
    public var local: UserID {
        guard let slash = rawValue.firstIndex(of: "/") else { return self }
        return UserID(unchecked: String(rawValue[rawValue.index(after: slash)...]))
    }

    /// A fresh, unguessable id: `u_` and 26 base32 characters (130 random bits).
    public static func generate() -> UserID {
        UserID(unchecked: "u_" + Base32.encode(SymmetricKey(size: .init(bitCount: 136)).rawBytes).prefix(26))
    }

    private init(unchecked rawValue: String) { self.rawValue = rawValue }

    /// The reference iOS client's ids: three groups of three characters, `xxx-xxx-xxx`.
    public var isLegacyShaped: Bool {
        let groups = local.rawValue.split(separator: "-", omittingEmptySubsequences: false)
        return groups.count == 3 && groups.allSatisfy { $0.count == 3 }
    }

    /// The store's key (`rawValue`): what logs must not show (see `logValue`) and what the
    /// server's own records hold. Answers to an app carry `local`.
    public var description: String { rawValue }

    /// Decoded from the store's own records (a key, see `init(storageKey:)`); an app's input is
    /// read with `init(_:)`.
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserID(storageKey: raw) else {
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
