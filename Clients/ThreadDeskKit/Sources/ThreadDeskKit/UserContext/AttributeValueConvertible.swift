import Foundation

/// A value the app says about its user as the app already holds it, so that
/// `setAttributes(["plan": "pro", "seats": 3, "trialEnds": date])` needs no wrapping: text, a
/// whole number, a number, yes or no, a date, or an `AttributeValue` itself.
public protocol AttributeValueConvertible: Sendable {
    var attributeValue: AttributeValue { get }
}

extension AttributeValue: AttributeValueConvertible {
    public var attributeValue: AttributeValue { self }

    /// `date` as the wire writes dates: ISO 8601 in UTC, to the second.
    public static func date(_ date: Date) -> AttributeValue {
        .date(date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(secondsFromGMT: 0)!)))
    }
}

extension String: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .string(self) }
}

extension Substring: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .string(String(self)) }
}

extension Int: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .integer(self) }
}

extension Double: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .number(self) }
}

extension Bool: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .bool(self) }
}

extension Date: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .date(self) }
}
