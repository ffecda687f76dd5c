import Foundation

extension SupportHours {
    /// The hours' open intervals over a stretch of time, with the open seconds before each, so
    /// that "how much support time passed between two dates" and "when will this much support time
    /// have passed" are a binary search each: a year of first responses is measured with one
    /// calendar walk, not one per conversation.
    public struct Timeline: Sendable {
        /// Merged, in order, within the stretch (seconds since 1970).
        let intervals: [(start: Double, end: Double)]
        /// Open seconds before each interval.
        let before: [Double]
        public let start: Date
        public let end: Date

        init(intervals: [(start: Double, end: Double)], start: Date, end: Date) {
            self.intervals = intervals
            var total = 0.0
            before = intervals.map { interval in
                defer { total += interval.end - interval.start }
                return total
            }
            (self.start, self.end) = (start, end)
        }

        /// Open seconds from the stretch's start to `date` (clamped to the stretch).
        func openSeconds(until date: Date) -> Double {
            let time = date.timeIntervalSince1970
            // The last interval that starts before `time`.
            var (low, high) = (0, intervals.count)
            while low < high {
                let middle = (low + high) / 2
                if intervals[middle].start < time { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return 0 }
            let interval = intervals[low - 1]
            return before[low - 1] + (min(time, interval.end) - interval.start)
        }

        /// Support time (seconds) between `from` and `to`, within the stretch; 0 when `to` is not later.
        public func openSeconds(from: Date, to: Date) -> Double {
            guard to > from else { return 0 }
            return max(0, openSeconds(until: to) - openSeconds(until: from))
        }

        /// The date at which `seconds` of support time have passed since `from`; nil when that is
        /// past the stretch.
        public func date(afterOpen seconds: Double, from: Date) -> Date? {
            let target = openSeconds(until: from) + max(0, seconds)
            // The first interval whose end reaches the target.
            var (low, high) = (0, intervals.count)
            while low < high {
                let middle = (low + high) / 2
                if before[middle] + (intervals[middle].end - intervals[middle].start) < target { low = middle + 1 } else { high = middle }
            }
            guard low < intervals.count else { return nil }
            let date = Date(timeIntervalSince1970: intervals[low].start + (target - before[low]))
            return max(date, from)
        }
    }

    /// The timeline of the hours from `start` to `end` (at most ~2 years are walked).
    public func timeline(from start: Date, to end: Date) -> Timeline {
        guard end > start else { return Timeline(intervals: [], start: start, end: start) }
        let end = min(end, start.addingTimeInterval(800 * 86_400))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var pieces: [(start: Double, end: Double)] = []
        // From the day before (a span past midnight reaches into the start's day).
        guard var day = calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: start)) else {
            return Timeline(intervals: [], start: start, end: end)
        }
        let (lower, upper) = (start.timeIntervalSince1970, end.timeIntervalSince1970)
        while day < end {
            guard let next = calendar.date(byAdding: .day, value: 1, to: day) else { break }
            let weekday = calendar.component(.weekday, from: day)
            for span in spans where span.days.contains(weekday) {
                guard let open = calendar.date(bySettingHour: span.start / 60, minute: span.start % 60, second: 0, of: day) else { continue }
                let close: Date?
                if span.end > span.start {
                    close = span.end == 24 * 60 ? next : calendar.date(bySettingHour: span.end / 60, minute: span.end % 60, second: 0, of: day)
                } else {
                    // Past midnight (or all day: 00:00-00:00): it ends on the next day.
                    close = span.end == 0 ? next : calendar.date(bySettingHour: span.end / 60, minute: span.end % 60, second: 0, of: next)
                }
                guard let close else { continue }
                let piece = (start: max(open.timeIntervalSince1970, lower), end: min(close.timeIntervalSince1970, upper))
                if piece.end > piece.start { pieces.append(piece) }
            }
            day = next
        }
        pieces.sort { $0.start < $1.start }
        var merged: [(start: Double, end: Double)] = []
        for piece in pieces {
            if let last = merged.last, piece.start <= last.end {
                merged[merged.count - 1].end = max(last.end, piece.end)
            } else {
                merged.append(piece)
            }
        }
        return Timeline(intervals: merged, start: start, end: end)
    }
}
