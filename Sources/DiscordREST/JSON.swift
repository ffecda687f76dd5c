import Foundation

/// A JSON value for open-ended payloads (Discord's, an app's diagnostics): read and written as a
/// tree rather than fixed structs, with the explicit `null`s Discord's schema requires.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    /// An integer a `Double` cannot hold exactly (beyond ±2^53): a snowflake sent as a number,
    /// as the stock Discord libraries send ids. Smaller integers are `number`s.
    case integer(Int64)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var doubleValue: Double? {
        if case .number(let value) = self { return value }
        if case .integer(let value) = self { return Double(value) }
        return nil
    }

    /// An integer, only when the number has no fractional part.
    public var intValue: Int? {
        if case .integer(let value) = self { return Int(value) }
        guard case .number(let value) = self else { return nil }
        return Int(exactly: value)
    }

    public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool { self == .null }

    public static func parse(_ data: Data) throws -> JSON {
        try JSONDecoder().decode(JSON.self, from: data)
    }

    public func encoded() -> Data {
        // Encoding a JSON tree cannot fail: every case maps to a JSON token.
        (try? Self.encoder.encode(self)) ?? Data("null".utf8)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

extension JSON: Codable {
    /// 2^53: every integer up to it is exact in a `Double`.
    static let exactInDouble: UInt64 = 1 << 53

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            // A whole number the Double did not hold exactly is read again, exactly.
            if value.magnitude >= Double(Self.exactInDouble), value.magnitude < 0x1p63, value.rounded() == value,
                let exact = try? container.decode(Int64.self), Int64(exactly: value) != exact
            {
                self = .integer(exact)
            } else {
                self = .number(value)
            }
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers as integers (what the Double holds, digit for digit).
            if value.rounded() == value, value.magnitude < 0x1p63 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .integer(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSON {
    /// `nil` becomes JSON `null`, as Discord writes absent-but-required fields.
    public init(_ value: String?) { self = value.map(JSON.string) ?? .null }
    public init(_ value: Int) { self = .number(Double(value)) }
}
