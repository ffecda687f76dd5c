import Crypto
import Foundation

/// Bearer tokens handed to widgets. Only their SHA-256 is stored, so a leaked database
/// does not let anyone speak as a user.
public enum UserToken {
    /// 256 random bits, base64url without padding.
    public static func generate() -> String {
        Data(SymmetricKey(size: .bits256).rawBytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A token for `user`: `<userId>~<256 random bits>`. The id (not secret: the app knows it)
    /// says whose token to check, so a user can hold several (one per device) without an index
    /// of them all; `~` never occurs in a user id.
    public static func generate(for user: UserID) -> String {
        "\(user.rawValue)~\(generate())"
    }

    /// A token for `user` on an attested device: `<userId>~<random>.<device>`, the device being
    /// the App Attest key id in base64url. The store keeps the hash of the whole token, so the
    /// device part cannot be changed without losing the token: it needs no record of its own.
    public static func generate(for user: UserID, device: String?) -> String {
        guard let device else { return generate(for: user) }
        return "\(generate(for: user)).\(device)"
    }

    /// The attested device a token was issued to (see `generate(for:device:)`), nil for others.
    public static func device(in token: String) -> String? {
        guard let separator = token.lastIndex(of: "~") else { return nil }
        let rest = token[token.index(after: separator)...]
        guard let dot = rest.firstIndex(of: ".") else { return nil }
        let device = rest[rest.index(after: dot)...]
        return device.isEmpty ? nil : String(device)
    }

    /// The user a token names, for tokens made by `generate(for:)`; nil for older tokens (found
    /// by their hash alone).
    public static func user(in token: String) -> UserID? {
        guard let separator = token.lastIndex(of: "~") else { return nil }
        return UserID(storageKey: String(token[..<separator]))
    }

    public static func hash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).hexString
    }
}

/// Identity verification for apps with their own backend: the app's server computes
/// `hex(HMAC-SHA256(secret, userId))` and the widget presents it with the user id (the id as the
/// app knows it: each app has its own secret).
public struct IdentityVerifier: Sendable {
    private let secret: Data

    public init(secret: String) {
        self.secret = Data(secret.utf8)
    }

    private var key: SymmetricKey { SymmetricKey(data: secret) }

    public func userHash(for id: UserID) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(id.local.rawValue.utf8), using: key)).hexString
    }

    /// Constant-time comparison of a presented hash, in either hex case.
    public func verify(_ presented: String, for id: UserID) -> Bool {
        guard let bytes = Data(hex: presented) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(bytes, authenticating: Data(id.local.rawValue.utf8), using: key)
    }
}

/// Compares secrets (app keys, gateway secret) without leaking their content through timing.
public func constantTimeEquals(_ a: String, _ b: String) -> Bool {
    let left = SHA256.hash(data: Data(a.utf8))
    let right = SHA256.hash(data: Data(b.utf8))
    return zip(left, right).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}

extension Sequence where Element == UInt8 {
    /// Lower-case hex (on the hot path of every authenticated request: no `String(format:)`).
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Data {
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
