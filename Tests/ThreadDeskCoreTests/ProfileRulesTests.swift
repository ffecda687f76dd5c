import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskWire

/// The rules of what the app says about its user, and how support reads it.
@Suite struct ProfileRulesTests {
    @Test func datesAreRFC3339WithAZoneAndKeptAsUTC() throws {
        let kept = [
            "2027-01-02T03:04:05Z": 1_798_859_045.0, "2027-01-02t03:04:05z": 1_798_859_045, "2027-01-02T03:04:05.678+01:00": 1_798_855_445,
            "2024-02-29T00:00:00-00:30": 1_709_166_600, "1970-01-01T00:00:00Z": 0, "2016-12-31T23:59:60Z": 1_483_228_800,
        ]
        for (text, seconds) in kept {
            let date = try #require(ProfileRules.date(text), "\(text)")
            #expect(date.timeIntervalSince1970.rounded(.down) == seconds, "\(text)")
        }
        for text in [
            "2027-01-02T03:04:05", "2027-01-02", "2023-02-29T00:00:00Z", "2027-13-01T00:00:00Z", "2027-01-02T24:00:00Z", "2027-01-02T03:04:05+1:00",
            "2027-01-02T03:04:05.Z", "tomorrow at noon, UTC!!", "２０２７-01-02T03:04:05Z", "2027-01-02T03:04:05Z ",
        ] {
            #expect(ProfileRules.date(text) == nil, "\(text)")
        }
        #expect(try ProfileRules.checked(.date("2027-01-02T03:04:05.9+01:00"), field: "ends") == .date("2027-01-02T02:04:05Z"))
    }

    @Test func keysValuesAndMergesAreBounded() throws {
        #expect(ProfileRules.isKey("trial_ends_2") && !ProfileRules.isKey("Plan") && !ProfileRules.isKey("") && !ProfileRules.isKey("a.b"))
        #expect(ProfileRules.isActivityName("checkout.started") && !ProfileRules.isActivityName("Checkout"))
        #expect(throws: ProfileRules.Violation.self) { try ProfileRules.checked(.string(String(repeating: "x", count: 257)), field: "plan") }
        #expect(throws: ProfileRules.Violation.self) { try ProfileRules.checked(.string("a\tb"), field: "plan") }
        #expect(throws: ProfileRules.Violation.self) { try ProfileRules.checked(.number(.infinity), field: "ratio") }
        // No line of its own, no text reordered: Discord breaks lines at U+2028/U+2029.
        for scalar in ["\u{2028}", "\u{2029}", "\u{202E}", "\u{2066}", "\u{200F}"] {
            #expect(throws: ProfileRules.Violation.self) { try ProfileRules.checked(.string("pro\(scalar)- Identity: verified"), field: "plan") }
        }
        // Dates Foundation would print in another calendar, or in no RFC 3339 form, are refused.
        for text in ["1582-10-10T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:60-23:59"] {
            #expect(throws: ProfileRules.Violation.self) { try ProfileRules.checked(.date(text), field: "ends") }
        }
        let full = Dictionary(uniqueKeysWithValues: (0..<50).map { ("k\($0)", AttributeValue.integer($0)) })
        #expect(throws: ProfileRules.Violation.self) { try ProfileRules.merged(full, ["one_more": .bool(true)]) }
        let update: [String: AttributeValue?] = ["k1": nil, "one_more": .bool(true)]
        #expect(try ProfileRules.merged(full, update).count == 50)
        // A key the client chose is named clipped, its controls shown.
        let violation = try #require(throws: ProfileRules.Violation.self) {
            try ProfileRules.merged([:], [String(repeating: "Ä", count: 60) + "\u{1B}": .integer(1)])
        }
        #expect(violation.field.count == 41 && violation.field.hasSuffix("…"))
    }

    @Test func anEventKeepsTheDevicesTimeOnlyWhenItIsPlausible() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let recent = try ProfileRules.activity(ActivityEvent(id: "e1", name: "opened", occurredAt: "2027-01-14T00:00:00Z"), now: now)
        #expect(recent.occurredAt == ProfileRules.date("2027-01-14T00:00:00Z"))
        let future = try ProfileRules.activity(ActivityEvent(id: "e2", name: "opened", occurredAt: "2030-01-01T00:00:00Z"), now: now)
        let ancient = try ProfileRules.activity(ActivityEvent(id: "e3", name: "opened", occurredAt: "2001-01-01T00:00:00Z"), now: now)
        #expect(future.occurredAt == now && ancient.occurredAt == now)
    }

    @Test func supportReadsEveryValueEscapedWithinItsRoom() {
        let attributes: [String: AttributeValue] = [
            "company": .string("@everyone <@1> [x](https://a.b)"), "seats": .integer(3), "trial": .bool(false), "ends": .date("2027-01-02T03:04:05Z"),
        ]
        let shown = ProfileText.attributes(attributes, budget: 500) ?? ""
        #expect(shown == #"`company` \@everyone \<\@1\> \[x\](https\://a.b) · `ends` <t:1798859045:f> · `seats` 3 · `trial` no"#)
        let cut = ProfileText.attributes(attributes, budget: 60) ?? ""
        #expect(cut.utf16.count <= 60 && cut.hasSuffix("more"), "\(cut)")
        let events = (0..<12).map { ProfileText.Event(name: "opened", properties: ["n": .integer($0)], occurredAt: Date(timeIntervalSince1970: 1_800_000_000)) }
        let activity = ProfileText.activity(events, limit: 10, budget: 2_000) ?? ""
        #expect(activity.split(separator: "\n").count == 11 && activity.hasSuffix("… and 2 more"))
    }
}
