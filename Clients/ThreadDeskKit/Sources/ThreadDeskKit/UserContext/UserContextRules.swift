import Foundation

/// The server's rules for attributes and activity (`PUT /v1/attributes`, `POST /v1/activity`),
/// checked on the device so that the app's developer hears of a bad key at the call, not from a
/// refusal long after, when the device is back online.
enum UserContextRules {
    /// 1–40 of `a-z 0-9 _`.
    static func isKey(_ key: String) -> Bool {
        let scalars = key.unicodeScalars
        return (1...AttributesUpdate.keyLength).contains(scalars.count)
            && scalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// 1–64 of `a-z 0-9 _ .`.
    static func isActivityName(_ name: String) -> Bool {
        let scalars = name.unicodeScalars
        return (1...ActivityEvent.nameLength).contains(scalars.count)
            && scalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }
    }

    /// Why `value` is refused, or nil: text over 256 characters or of more than one line (or with
    /// a control character), a number JSON cannot carry, a date that is not ISO 8601 with a time zone.
    static func problem(with value: AttributeValue) -> String? {
        switch value {
        case .string(let text):
            if text.count > AttributeValue.textLimit || text.unicodeScalars.count > AttributeValue.textLimit * 4 {
                "a text of \(text.count) characters (at most \(AttributeValue.textLimit))"
            } else if text.unicodeScalars.contains(where: isControl) {
                "a text is one line without control characters"
            } else {
                nil
            }
        case .number(let number):
            number.isFinite ? nil : "a number that is not finite"
        case .date(let text):
            Timestamp.date(text).map(Self.dates.contains) == true ? nil : "a date that is not ISO 8601 with a time zone, from 1600 to 9000 (\(text.prefix(40)))"
        case .integer, .bool:
            nil
        }
    }

    /// The dates the server keeps (it prints none before 1600 or past 9000).
    static let dates = Date(timeIntervalSince1970: -11_676_096_000)..<Date(timeIntervalSince1970: 221_845_392_000)

    /// Checks one attribute or property, refusing with `code` and the key named.
    static func check(_ key: String, _ value: AttributeValue?, code: ErrorCode) throws(ThreadDeskError) {
        guard isKey(key) else {
            throw .invalidInput(code, "\(key.prefix(60)): a key is 1–\(AttributesUpdate.keyLength) of a-z, 0-9 and _")
        }
        if let value, let problem = problem(with: value) { throw .invalidInput(code, "\(key): \(problem)") }
    }

    /// C0 (line breaks and tabs too: a value is one line), DEL and C1, as the server refuses them.
    /// Control characters, the line and paragraph separators Discord breaks lines at, and the
    /// bidirectional controls that would reorder the text around them (the server's rule).
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// The one of `keys` a server's refusal names: it starts `key: why`; nil when it names none
    /// of them (the update as a whole was refused).
    static func key(namedIn message: String, among keys: some Sequence<String>) -> String? {
        guard let colon = message.firstIndex(of: ":") else { return nil }
        let field = String(message[..<colon])
        return keys.first { $0 == field }
    }
}
