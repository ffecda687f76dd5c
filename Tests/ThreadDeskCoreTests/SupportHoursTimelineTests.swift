import Foundation
import Testing
import ThreadDeskCore

/// Support time between two dates, and the date at which so much support time has passed.
@Suite("Support hours as a timeline")
struct SupportHoursTimelineTests {
    static func utc(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }

    @Test func openTimeSkipsNightsAndWeekends() throws {
        let hours = try SupportHours("UTC Mon-Fri 09:00-17:00")
        let start = Self.utc("2026-12-04T16:50:00Z")
        let timeline = hours.timeline(from: start, to: Self.utc("2026-12-10T00:00:00Z"))
        #expect(timeline.openSeconds(from: start, to: Self.utc("2026-12-04T17:30:00Z")) == 600)
        // Over the weekend: 10 minutes on Friday and 20 on Monday.
        #expect(timeline.openSeconds(from: start, to: Self.utc("2026-12-07T09:20:00Z")) == 1800)
        #expect(timeline.date(afterOpen: 1800, from: start) == Self.utc("2026-12-07T09:20:00Z"))
        // Asked outside the hours, the count starts at the next opening.
        let saturday = Self.utc("2026-12-05T12:00:00Z")
        #expect(timeline.date(afterOpen: 60, from: saturday) == Self.utc("2026-12-07T09:01:00Z"))
        #expect(timeline.openSeconds(from: saturday, to: Self.utc("2026-12-06T23:59:00Z")) == 0)
        // Past the stretch read: unknown.
        #expect(timeline.date(afterOpen: 30 * 86_400, from: start) == nil)
        #expect(timeline.openSeconds(from: Self.utc("2026-12-07T10:00:00Z"), to: Self.utc("2026-12-07T09:00:00Z")) == 0)
    }

    @Test func spansPastMidnightAndOverlappingSpansCountOnce() throws {
        let hours = try SupportHours("UTC Fri 22:00-02:00; Fri 23:00-24:00")
        let start = Self.utc("2026-12-04T21:00:00Z")
        let timeline = hours.timeline(from: start, to: Self.utc("2026-12-06T00:00:00Z"))
        // 22:00 to 02:00: four hours, the overlapping hour once.
        #expect(timeline.openSeconds(from: start, to: Self.utc("2026-12-05T12:00:00Z")) == 4 * 3600)
        #expect(timeline.date(afterOpen: 3 * 3600, from: start) == Self.utc("2026-12-05T01:00:00Z"))
    }

    @Test func aZoneWithAnOffsetCountsItsOwnDays() throws {
        let hours = try SupportHours("UTC+02:00 Mon 09:00-10:00")
        // Monday 09:00 at +02:00 is 07:00 UTC.
        let start = Self.utc("2026-12-07T06:00:00Z")
        let timeline = hours.timeline(from: start, to: Self.utc("2026-12-08T00:00:00Z"))
        #expect(timeline.date(afterOpen: 1800, from: start) == Self.utc("2026-12-07T07:30:00Z"))
        #expect(timeline.openSeconds(from: start, to: Self.utc("2026-12-08T00:00:00Z")) == 3600)
    }
}
