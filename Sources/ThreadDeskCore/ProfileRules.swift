import Foundation
import ThreadDeskWire

/// What the app may say about its user (`PUT /v1/attributes`, `POST /v1/activity`): short keys, and
/// values an agent can read on one line. Anything else is refused whole, naming the key, so what
/// is kept is what the app sent; what is kept is data support reads, never an instruction.
public enum ProfileRules {
    /// A refused key, value, name or time; `field` names it (clipped: the client chose it).
    public struct Violation: Error, Equatable, CustomStringConvertible {
        public let field: String
        public let reason: String

        public var description: String { "\(field): \(reason)" }
    }

    /// `a-z`, `0-9` and `_`, 1 to 40 of them.
    public static func isKey(_ key: String) -> Bool {
        (1...AttributesUpdate.keyLength).contains(key.utf8.count) && key.utf8.allSatisfy { isKeyByte($0) }
    }

    /// `a-z`, `0-9`, `_` and `.`, 1 to 64 of them.
    public static func isActivityName(_ name: String) -> Bool {
        (1...ActivityEvent.nameLength).contains(name.utf8.count) && name.utf8.allSatisfy { isKeyByte($0) || $0 == UInt8(ascii: ".") }
    }

    /// The app's id of an event: 1 to 64 visible ASCII characters (a UUID, as a rule).
    public static func isEventID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }

    /// How a violation names what the client sent: at most 40 characters, controls shown as symbols.
    public static func named(_ field: String) -> String { ControlCharacters.named(field) }

    /// `value` as it is kept: a text of one line of at most 256 characters, a finite number, a
    /// date in ISO 8601 with a time zone (kept as UTC, `2026-12-07T10:00:00Z`, fractions of a
    /// second dropped).
    public static func checked(_ value: AttributeValue, field: String) throws(Violation) -> AttributeValue {
        switch value {
        case .string(let text):
            guard text.unicodeScalars.count <= AttributeValue.textLimit * 4, text.count <= AttributeValue.textLimit else {
                throw Violation(field: named(field), reason: "a text value is at most \(AttributeValue.textLimit) characters")
            }
            if let refused = text.unicodeScalars.first(where: isRefusedInLine) {
                throw Violation(field: named(field), reason: "a text value is one line without control characters (it holds \(ControlCharacters.name(refused)))")
            }
            return value
        case .number(let number):
            guard number.isFinite else { throw Violation(field: named(field), reason: "a number must be finite") }
            return value
        case .integer, .bool:
            return value
        case .date(let text):
            guard let date = date(text), dates.contains(date) else {
                throw Violation(field: named(field), reason: "a date is RFC 3339 with a time zone, like 2026-12-07T10:00:00Z, from the year 1600 to 9000")
            }
            return .date(iso(date))
        }
    }

    /// The dates a value may hold: Foundation's formatter is Julian before 1582, and a year past
    /// 9999 has no RFC 3339 form.
    static let dates = Date(timeIntervalSince1970: -11_676_096_000)..<Date(timeIntervalSince1970: 221_845_392_000)

    /// What a one-line value may not hold: control characters (line breaks and tabs too), the
    /// line and paragraph separators Discord breaks lines at, and the bidirectional controls that
    /// would reorder the text around them.
    static func isRefusedInLine(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `current` with `update` merged in (`nil` removes a key), every key and value checked; the
    /// result holds at most 50 keys.
    public static func merged(_ current: [String: AttributeValue], _ update: [String: AttributeValue?]) throws(Violation) -> [String: AttributeValue] {
        guard update.count <= AttributesUpdate.keyLimit else {
            throw Violation(field: "attributes", reason: "at most \(AttributesUpdate.keyLimit) keys in one update (this one has \(update.count))")
        }
        var result = current
        for key in update.keys.sorted() {
            guard isKey(key) else { throw Violation(field: named(key), reason: "a key is 1 to \(AttributesUpdate.keyLength) of a-z, 0-9 and _") }
            guard let value = update[key] ?? nil else {
                result[key] = nil
                continue
            }
            result[key] = try checked(value, field: key)
        }
        guard result.count <= AttributesUpdate.keyLimit else {
            throw Violation(field: "attributes", reason: "a user holds at most \(AttributesUpdate.keyLimit) keys (this update would make \(result.count)); send null to remove some")
        }
        return result
    }

    /// An event as it is kept: its id, name and properties checked, its time the device's when it
    /// is within 90 days before and a day after `now`, else `now`.
    public static func activity(_ event: ActivityEvent, now: Date) throws(Violation)
        -> (id: String, name: String, properties: [String: AttributeValue], occurredAt: Date)
    {
        guard isEventID(event.id) else { throw Violation(field: "id", reason: "1 to 64 visible ASCII characters (a UUID)") }
        guard isActivityName(event.name) else {
            throw Violation(field: "name", reason: "1 to \(ActivityEvent.nameLength) of a-z, 0-9, _ and .")
        }
        guard event.properties.count <= ActivityEvent.propertyLimit else {
            throw Violation(field: "properties", reason: "at most \(ActivityEvent.propertyLimit) (this event has \(event.properties.count))")
        }
        var properties: [String: AttributeValue] = [:]
        for key in event.properties.keys.sorted() {
            guard isKey(key) else {
                throw Violation(field: "properties." + named(key), reason: "a key is 1 to \(AttributesUpdate.keyLength) of a-z, 0-9 and _")
            }
            properties[key] = try checked(event.properties[key]!, field: "properties." + key)
        }
        var occurred = now
        if let text = event.occurredAt {
            guard let date = date(text) else {
                throw Violation(field: "occurredAt", reason: "ISO 8601 with a time zone, like 2026-12-07T10:00:00Z")
            }
            if date >= now.addingTimeInterval(-90 * 86_400), date <= now.addingTimeInterval(86_400) { occurred = date }
        }
        return (event.id, event.name, properties, occurred)
    }

    /// An RFC 3339 date-time (ISO 8601 with a time zone): `2026-12-07T10:00:00Z`, fractions of a
    /// second and an offset allowed, `t`/`z` in either case (the wire's own reading, `Timestamp`).
    public static func date(_ text: String) -> Date? {
        guard (20...64).contains(text.utf8.count) else { return nil }
        return Timestamp.date(text)
    }

    /// A date as dates are kept and shown: UTC, whole seconds.
    public static func iso(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }
}
