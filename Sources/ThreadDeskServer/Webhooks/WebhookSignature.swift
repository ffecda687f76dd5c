import Crypto
import Foundation

/// `ThreadDesk-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`, as
/// payment providers sign theirs: the time inside the signed text, so a delivery replayed later
/// fails the receiver's tolerance.
public enum WebhookSignature {
    public static let header = "ThreadDesk-Signature"

    /// The header's value for `body` sent at `date`.
    public static func value(body: Data, secret: String, at date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        return "t=\(seconds),v1=\(hex(body: body, secret: secret, seconds: seconds))"
    }

    static func hex(body: Data, secret: String, seconds: Int64) -> String {
        var signed = Data("\(seconds).".utf8)
        signed.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `header` signs `body` with `secret` within `tolerance` of `now` (the receiver's
    /// side, as the README shows it; the tests' receiver checks every delivery with it).
    public static func verify(_ header: String, body: Data, secret: String, now: Date, tolerance: TimeInterval = 300) -> Bool {
        var seconds: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { seconds = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let seconds, abs(now.timeIntervalSince1970 - Double(seconds)) <= tolerance else { return false }
        let expected = Array(hex(body: body, secret: secret, seconds: seconds).utf8)
        return signatures.contains { candidate in
            let given = Array(candidate.utf8)
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}
