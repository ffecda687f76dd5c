import Foundation
import ThreadDeskWire

/// What the app says about its user, as an agent reads it in Discord (the `/user` card, a new
/// thread's first note). The app chose every value: each is escaped (`DiscordMarkdown`), keys and
/// names (`a-z0-9_.` only) stand in code spans, and everything fits the room it is given, saying
/// how much was left out.
public enum ProfileText {
    /// One event of the activity, as the text needs it.
    public struct Event: Sendable {
        public var name: String
        public var properties: [String: AttributeValue]
        public var occurredAt: Date

        public init(name: String, properties: [String: AttributeValue], occurredAt: Date) {
            self.name = name
            self.properties = properties
            self.occurredAt = occurredAt
        }
    }

    /// Characters of a text value shown; the export has them whole.
    static let valueCharacters = 80

    /// A value on one line: a text escaped, a date in Discord's timestamp markup (each agent reads
    /// it in their time zone).
    public static func shown(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): return text.isEmpty ? "\"\"" : DiscordMarkdown.escaped(MessageText.clip(text, limit: valueCharacters))
        case .integer(let number): return String(number)
        case .number(let number): return String(number)
        case .bool(let flag): return flag ? "yes" : "no"
        case .date(let text):
            guard let date = ProfileRules.date(text) else { return DiscordMarkdown.escaped(text) }
            return "<t:\(Int(date.timeIntervalSince1970.rounded(.down))):f>"
        }
    }

    /// `` `plan` pro · `seats` 3 ``: the attributes by key, within `budget` UTF-16 units; the ones
    /// that did not fit are counted at the end. nil when there are none.
    public static func attributes(_ attributes: [String: AttributeValue], budget: Int) -> String? {
        guard !attributes.isEmpty else { return nil }
        let items = attributes.keys.sorted().map { "`\($0)` \(shown(attributes[$0]!))" }
        return fitted(items, separator: " · ", budget: budget)
    }

    /// One line per event, newest first, at most `limit`, within `budget` UTF-16 units. nil when there are none.
    public static func activity(_ events: [Event], limit: Int, budget: Int) -> String? {
        guard !events.isEmpty else { return nil }
        let items = events.prefix(limit).map { event in
            let properties = event.properties.keys.sorted().map { "`\($0)` \(shown(event.properties[$0]!))" }
            let when = "<t:\(Int(event.occurredAt.timeIntervalSince1970.rounded(.down))):R>"
            return (["- `\(event.name)` \(when)"] + properties).joined(separator: " · ")
        }
        return fitted(items, separator: "\n", budget: budget, more: events.count - items.count)
    }

    /// As many of `items` as fit `budget` with a count of the rest; an item longer than the whole
    /// room is never cut in half (an escape cut would show), it is counted instead.
    static func fitted(_ items: [String], separator: String, budget: Int, more extra: Int = 0) -> String {
        var shown: [String] = []
        var used = 0
        for (index, item) in items.enumerated() {
            let rest = items.count - index - 1 + extra
            let tail = rest > 0 ? separator.utf16.count + " … and 99 more".utf16.count + String(rest).utf16.count : 0
            let cost = (shown.isEmpty ? 0 : separator.utf16.count) + item.utf16.count
            guard used + cost + tail <= budget else { break }
            shown.append(item)
            used += cost
        }
        let left = items.count - shown.count + extra
        if left > 0 { shown.append("… and \(left) more") }
        return shown.joined(separator: separator)
    }
}
