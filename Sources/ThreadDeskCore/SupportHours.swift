import Foundation

/// When support answers: a time zone and weekly hours, as `SUPPORT_HOURS` spells them —
/// `Europe/Berlin Mon-Fri 09:00-17:00; Sat 10:00-14:00`. Hours that end at or before they start
/// run past midnight (`Fri 22:00-02:00` is Friday night into Saturday).
public struct SupportHours: Sendable, Hashable {
    public struct Span: Sendable, Hashable {
        /// Weekdays, 1 = Sunday … 7 = Saturday (as `Calendar` numbers them).
        public var days: Set<Int>
        /// Minutes after midnight.
        public var start: Int
        public var end: Int
    }

    public var timeZone: TimeZone
    public var spans: [Span]

    public enum Problem: Error, Equatable {
        case unknownTimeZone(String)
        case invalid(String)
    }

    /// The zone of an IANA name (`Europe/Berlin`) or a fixed offset (`UTC+02:00`, `GMT-5`).
    /// Offsets are read here, never by Foundation: its parser of `GMT…`/`UTC…` names crashes on
    /// some malformed ones (the fuzzer found `UTC-00:` followed by a control character).
    static func timeZone(named name: String) -> TimeZone? {
        let allowed = name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "/_+-:".unicodeScalars.contains($0)) }
        guard allowed, !name.isEmpty, name.count <= 64 else { return nil }
        let upper = name.uppercased()
        guard let prefix = ["GMT", "UTC", "UT"].first(where: { upper.hasPrefix($0) }) else { return TimeZone(identifier: name) }
        let rest = upper.dropFirst(prefix.count)
        if rest.isEmpty { return TimeZone(secondsFromGMT: 0) }
        guard let sign = rest.first, sign == "+" || sign == "-" else { return nil }
        let parts = rest.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let hours = Int(parts[0]), hours <= 14
        else { return nil }
        let minutes = parts.count == 2 ? Int(parts[1]) ?? 60 : 0
        guard minutes < 60, parts.count == 1 || parts[1].count == 2 else { return nil }
        return TimeZone(secondsFromGMT: (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60))
    }

    static let dayNames = ["sun": 1, "mon": 2, "tue": 3, "wed": 4, "thu": 5, "fri": 6, "sat": 7]

    public init(_ text: String) throws(Problem) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count <= 500, let space = trimmed.firstIndex(of: " ") else { throw .invalid(text) }
        let zone = String(trimmed[..<space])
        guard let timeZone = Self.timeZone(named: zone) else { throw .unknownTimeZone(zone) }
        self.timeZone = timeZone
        spans = []
        for part in trimmed[space...].split(separator: ";") {
            let words = part.split(separator: " ")
            guard words.count == 2 else { throw .invalid(String(part)) }
            let days = try Self.days(String(words[0]))
            let times = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard times.count == 2, let start = Self.minutes(times[0]), let end = Self.minutes(times[1]), start != end || start == 0 else {
                throw .invalid(String(part))
            }
            spans.append(Span(days: days, start: start, end: end))
        }
        guard !spans.isEmpty else { throw .invalid(text) }
    }

    /// `Mon-Fri`, `Sat`, `Sun,Sat`.
    private static func days(_ text: String) throws(Problem) -> Set<Int> {
        var days = Set<Int>()
        for piece in text.lowercased().split(separator: ",") {
            let bounds = piece.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let first = dayNames[String(bounds[0])], let last = dayNames[String(bounds.last!)] else {
                throw .invalid(text)
            }
            // A range may wrap the week (Sat-Mon).
            var day = first
            while true {
                days.insert(day)
                if day == last { break }
                day = day % 7 + 1
            }
        }
        return days
    }

    /// `09:00` → 540; `24:00` is the end of the day.
    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }), let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0...59).contains(minutes), (0...23).contains(hours) || (hours == 24 && minutes == 0)
        else { return nil }
        return hours * 60 + minutes
    }

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    /// Whether support is in at `date`.
    public func isOpen(at date: Date) -> Bool {
        let calendar = self.calendar
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        guard let weekday = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return false }
        let now = hour * 60 + minute
        let yesterday = (weekday + 5) % 7 + 1
        return spans.contains { span in
            if span.end > span.start { return span.days.contains(weekday) && (span.start..<span.end).contains(now) }
            // Past midnight: the evening of its day, or the small hours after it.
            return (span.days.contains(weekday) && now >= span.start) || (span.days.contains(yesterday) && now < span.end)
        }
    }

    /// When support is next in, from `date` on (nil: it already is, or never within a week).
    public func nextOpening(after date: Date) -> Date? {
        if isOpen(at: date) { return nil }
        let calendar = self.calendar
        let today = calendar.startOfDay(for: date)
        var best: Date?
        for offset in 0...7 {
            guard let day = calendar.date(byAdding: .day, value: offset, to: today) else { continue }
            let weekday = calendar.component(.weekday, from: day)
            for span in spans where span.days.contains(weekday) {
                guard let opening = calendar.date(bySettingHour: span.start / 60, minute: span.start % 60, second: 0, of: day), opening > date else {
                    continue
                }
                if best.map({ opening < $0 }) ?? true { best = opening }
            }
            if best != nil { return best }
        }
        return best
    }
}
