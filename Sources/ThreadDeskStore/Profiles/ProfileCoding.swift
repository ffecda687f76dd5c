import Foundation
import ThreadDeskWire

/// Attributes and properties as the SQL stores keep them: one JSON object in a text column, keys
/// sorted, the wire's own coding (a date is `{"date": …}`).
enum ProfileCoding {
    static func encode(_ values: [String: AttributeValue]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(values), as: UTF8.self)
    }

    /// A column written by `encode`; an unreadable one reads as nothing rather than failing the
    /// whole profile (it is shown to support, never needed to serve the user).
    static func decode(_ text: String) -> [String: AttributeValue] {
        (try? JSONDecoder().decode([String: AttributeValue].self, from: Data(text.utf8))) ?? [:]
    }

    /// A read's UTC day: a read counts once per user, article and day.
    static func day(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 86_400).rounded(.down)) }
}
