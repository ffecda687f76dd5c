import Crypto
import Foundation

extension UserID {
    /// How logs name a user: a fingerprint, never the id. A legacy id is its user's only
    /// credential on the legacy routes, and an id an app chooses may be an address or a name.
    /// A plain hash of ids that short or that guessable is reversed by trying them all, so the
    /// fingerprint is keyed by a random key of this process: its lines name one user alike, and
    /// nobody can tell from them whose they are.
    public var logValue: String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(rawValue.utf8), using: SymmetricKey(data: Self.logKey))
        return "u#" + code.prefix(6).map { String(format: "%02x", $0) }.joined()
    }

    private static let logKey: [UInt8] = SymmetricKey(size: .bits256).rawBytes
}
