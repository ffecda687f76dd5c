import Foundation

/// The delay of `/close in:` as an agent types it: `30m`, `2h`, `1d`, `1h30m`, `90 min`.
/// Between a minute and 30 days.
enum CloseDelay {
    static func parse(_ text: String) -> Duration? {
        let compact = text.lowercased().filter { !$0.isWhitespace }
        guard !compact.isEmpty, compact.count <= 16 else { return nil }
        let units: [(String, Int)] = [("days", 86_400), ("day", 86_400), ("d", 86_400), ("hours", 3600), ("hour", 3600), ("h", 3600),
            ("minutes", 60), ("minute", 60), ("min", 60), ("m", 60)]
        var rest = Substring(compact)
        var seconds = 0
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 5, let number = Int(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            guard let (unit, size) = units.first(where: { rest.hasPrefix($0.0) }) else { return nil }
            rest = rest.dropFirst(unit.count)
            seconds += number * size
        }
        let delay = Duration.seconds(seconds)
        guard delay >= .seconds(60), delay <= LifecycleSettings.longestScheduledClose else { return nil }
        return delay
    }
}
