import Crypto
import DiscordREST
import Foundation
import Synchronization

/// The CDN as Discord runs it: attachment URLs carry `ex` (expiry), `is` (issued; both Unix
/// seconds in hexadecimal) and `hm` (a signature over the path and both times); an expired or
/// forged URL is a 404, and `POST /attachments/refresh-urls` signs a URL anew.
extension DiscordWorld {
    /// How long a signed URL works (Discord's are good for about a day).
    static let cdnURLLifetime: TimeInterval = 24 * 3600

    /// The emulator's clock for URL expiry: real time plus whatever a test moved it forward.
    var cdnNow: Date { Date().addingTimeInterval(clockOffset.withLock { $0 }) }

    func advanceClock(by seconds: TimeInterval) {
        clockOffset.withLock { $0 += max(0, seconds) }
    }

    static func attachmentPath(channelID: Snowflake, attachment: EmulatedAttachment) -> String {
        let escaped = attachment.filename.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "?#%;"))) ?? "file"
        return "/attachments/\(channelID)/\(attachment.id)/\(escaped)"
    }

    /// A URL for the attachment's bytes, signed now.
    func signedURL(channelID: Snowflake, attachment: EmulatedAttachment) -> String {
        signed(path: Self.attachmentPath(channelID: channelID, attachment: attachment))
    }

    private func signed(path: String) -> String {
        let issued = UInt64(cdnNow.timeIntervalSince1970)
        let expires = issued + UInt64(Self.cdnURLLifetime)
        let ex = String(expires, radix: 16)
        let issuedHex = String(issued, radix: 16)
        return "\(baseURL)\(path)?ex=\(ex)&is=\(issuedHex)&hm=\(signature(path: path, ex: ex, issued: issuedHex))&"
    }

    private func signature(path: String, ex: String, issued: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(path)|\(ex)|\(issued)".utf8), using: SymmetricKey(data: cdnKey))
        return mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// Whether a request for `path` with these query values may have the bytes.
    func isValidSignature(path: String, ex: String?, issued: String?, hm: String?) -> Bool {
        guard let ex, let issued, let hm, let expires = UInt64(ex, radix: 16), UInt64(issued, radix: 16) != nil else { return false }
        guard TimeInterval(expires) > cdnNow.timeIntervalSince1970 else { return false }
        return signature(path: path, ex: ex, issued: issued) == hm.lowercased()
    }

    /// `POST /attachments/refresh-urls`: each URL of an attachment that still exists, signed anew
    /// (expired or not); others are left out of the answer.
    func refreshURLs(_ urls: [String]) -> [(original: String, refreshed: String)] {
        urls.compactMap { original in
            guard let components = URLComponents(string: original) else { return nil }
            let segments = components.path.split(separator: "/")
            guard segments.count == 4, segments[0] == "attachments", let channel = Snowflake(String(segments[1])),
                let id = Snowflake(String(segments[2])), let attachment = attachment(id, in: channel)
            else { return nil }
            return (original, signedURL(channelID: channel, attachment: attachment))
        }
    }
}

extension EmulatedAttachment {
    /// Width and height of a PNG, GIF or JPEG, as Discord reports them for images.
    var imageSize: (width: Int, height: Int)? {
        let bytes = [UInt8](data.prefix(64 * 1024))
        func be(_ offset: Int, _ count: Int) -> Int {
            bytes[offset..<(offset + count)].reduce(0) { $0 << 8 | Int($1) }
        }
        if bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return (be(16, 4), be(20, 4)) }
        if bytes.count >= 10, bytes.starts(with: Array("GIF8".utf8)) {
            return (Int(bytes[6]) | Int(bytes[7]) << 8, Int(bytes[8]) | Int(bytes[9]) << 8)
        }
        if bytes.starts(with: [0xFF, 0xD8]) {
            var offset = 2
            while offset + 9 < bytes.count, bytes[offset] == 0xFF {
                let marker = bytes[offset + 1]
                let length = be(offset + 2, 2)
                if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) { return (be(offset + 7, 2), be(offset + 5, 2)) }
                offset += 2 + length
            }
        }
        return nil
    }
}
