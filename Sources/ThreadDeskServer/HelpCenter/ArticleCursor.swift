import Foundation

/// Where the next page of articles begins, opaque to clients (base64url). By title it holds the
/// last article's place in the order (its folded title and id), not its id alone: a page still
/// follows when that article was deleted or renamed in between. In a search it holds how many
/// results came before (the ranking itself moves with every edit, so a place in it is all there is).
enum ArticleCursor: Sendable, Hashable {
    case title(key: String, number: UInt64)
    case rank(offset: Int)

    /// Longest cursor accepted: a title of Discord's 100 characters, folded, in base64.
    static let maxLength = 1_024
    /// Deepest search offset accepted (a help center holds thousands of articles at most).
    static let maxOffset = 100_000

    var token: String {
        let text: String
        switch self {
        case .title(let key, let number): text = "t\(number):\(key)"
        case .rank(let offset): text = "r\(offset)"
        }
        return Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A cursor this server made; nil for anything else.
    init?(token: String) {
        guard (1...Self.maxLength).contains(token.utf8.count),
            token.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
        else { return nil }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8), let kind = text.first else { return nil }
        let rest = text.dropFirst()
        switch kind {
        case "t":
            guard let colon = rest.firstIndex(of: ":"), let number = UInt64(rest[..<colon]), rest[..<colon].allSatisfy(\.isASCII) else { return nil }
            self = .title(key: String(rest[rest.index(after: colon)...]), number: number)
        case "r":
            guard rest.allSatisfy(\.isASCII), let offset = Int(rest), (1...Self.maxOffset).contains(offset) else { return nil }
            self = .rank(offset: offset)
        default:
            return nil
        }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
