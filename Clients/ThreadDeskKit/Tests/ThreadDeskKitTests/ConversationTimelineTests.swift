import Foundation
import Testing
@testable import ThreadDeskKit

@Suite("The conversation's timeline, timestamps and pushes")
struct ConversationTimelineTests {
    static func message(_ id: Int, _ text: String? = nil, author: ConversationMessage.Author = .support(name: "Ana")) -> ConversationMessage {
        ConversationMessage(
            id: String(id), text: text ?? "m\(id)", files: [], author: author, date: Date(timeIntervalSince1970: Double(id)), delivery: .sent,
            isEdited: false)
    }

    static func local(_ text: String) -> ConversationMessage {
        ConversationMessage(pending: OutboxEntry(text: text))
    }

    @Test func messagesKeepTheirOrderByIdWhateverOrderTheyCameIn() {
        var timeline = ConversationTimeline()
        for id in [5, 1, 9, 3, 7, 100, 20] { timeline.upsert(Self.message(id)) }
        #expect(timeline.messages.map(\.id) == ["1", "3", "5", "7", "9", "20", "100"])
        // A snowflake one digit longer is newer, whatever its first digit.
        #expect(ConversationTimeline.precedes("999", "1000") && !ConversationTimeline.precedes("1000", "999"))
        // The same message again changes nothing; an edit replaces it in place.
        let repeated = timeline.upsert(Self.message(7))
        let edited = timeline.upsert(Self.message(7, "edited"))
        #expect(!repeated && edited)
        #expect(timeline.message(id: "7")?.text == "edited" && timeline.messages.count == 7)
        let removed = timeline.remove(id: "3")
        let removedAgain = timeline.remove(id: "3")
        #expect(removed && !removedAgain)
        #expect(timeline.messages.map(\.id) == ["1", "5", "7", "9", "20", "100"])
    }

    @Test func pagesMergeOlderNewerAndOverlappingWithoutRepeats() {
        var timeline = ConversationTimeline()
        timeline.merge((10...20).map { Self.message($0) })
        timeline.merge((1...5).map { Self.message($0) })  // loadEarlier
        timeline.merge((18...25).map { Self.message($0) })  // after a reconnect, overlapping
        timeline.merge([Self.message(7), Self.message(7), Self.message(12, "edited"), Self.message(6)])  // a gap filled, twice in one page
        let expected: [String] = Array(1...7).map { String($0) } + Array(10...25).map { String($0) }
        #expect(timeline.messages.map(\.id) == expected)
        #expect(timeline.message(id: "12")?.text == "edited")
        #expect(timeline.confirmedCount == timeline.messages.count)
    }

    @Test func theDevicesMessagesStayLastUntilTheServerHasThem() {
        var timeline = ConversationTimeline((1...3).map { Self.message($0) })
        let pending = Self.local("on my way")
        timeline.appendLocal(pending)
        timeline.upsert(Self.message(4))
        #expect(timeline.messages.map(\.id) == ["1", "2", "3", "4", pending.id])
        #expect(timeline.newestConfirmed?.id == "4" && !pending.isConfirmed)
        // The stream brought the user's own message before the send's answer: one copy on screen.
        let echoed = Self.message(5, "on my way", author: .user)
        let dropped = timeline.dropLocalCopy(of: echoed)
        #expect(dropped)
        timeline.upsert(echoed)
        timeline.confirm(localID: pending.id, as: echoed)
        #expect(timeline.messages.map(\.id) == ["1", "2", "3", "4", "5"])
        // Support's words never take a pending message's place.
        timeline.appendLocal(Self.local("same words"))
        let taken = timeline.dropLocalCopy(of: Self.message(6, "same words"))
        #expect(!taken)
        #expect(timeline.keepingNewest(2).messages.map(\.text) == ["m4", "on my way", "same words"])
    }

    /// Random operations against a plain sorted list: the timeline always agrees with it.
    @Test func randomOperationsAgreeWithSortingEverything() {
        var generator = SplitMix(seed: 44)
        var timeline = ConversationTimeline()
        var reference: [Int: String] = [:]
        for step in 0..<800 {
            let id = Int(generator.next() % 500) + 1
            switch generator.next() % 4 {
            case 0:
                timeline.remove(id: String(id))
                reference[id] = nil
            case 1:
                let page = (0..<Int(generator.next() % 20)).map { _ in Int(generator.next() % 500) + 1 }
                timeline.merge(page.map { Self.message($0, "s\(step)") })
                for id in page { reference[id] = "s\(step)" }
            default:
                timeline.upsert(Self.message(id, "s\(step)"))
                reference[id] = "s\(step)"
            }
            #expect(timeline.messages.map(\.id) == reference.keys.sorted().map(String.init))
        }
        #expect(timeline.messages.map(\.text) == reference.keys.sorted().map { reference[$0]! })
    }

    @Test func timestampsAsTheAPIWritesThem() throws {
        let reference = Date(timeIntervalSince1970: 1_795_886_757)  // 2026-11-28T17:25:57Z
        #expect(Timestamp.date("2026-11-28T17:25:57Z") == reference)
        #expect(Timestamp.date("2026-11-28T17:25:57.250000+00:00") == reference.addingTimeInterval(0.25))
        #expect(Timestamp.date("2026-11-28T19:25:57+02:00") == reference)
        #expect(Timestamp.date("2026-11-28T12:25:57.5-05:00") == reference.addingTimeInterval(0.5))
        #expect(Timestamp.date("2024-02-29T00:00:00Z") == Date(timeIntervalSince1970: 1_709_164_800))
        // Digits past the microsecond are dropped, not summed into the next second (a fuzz finding).
        let long = Timestamp.date("2026-11-28T17:25:57." + String(repeating: "9", count: 120) + "Z")
        #expect(try #require(long) < reference.addingTimeInterval(1))
        #expect(try #require(long) > reference.addingTimeInterval(0.999))
        for bad in ["", "2026-11-28", "2026-13-01T00:00:00Z", "2026-11-28T17:25:57", "2026-11-28T17:25:57.Z", "2026-11-28T17:25:57+0200",
            "2026-11-28T17:25:57Zjunk", "２026-11-28T17:25:57Z"]
        {
            #expect(Timestamp.date(bad) == nil, "\(bad)")
        }
    }

    @Test func aThreadDeskPushIsRecognisedAndOthersAreNot() {
        let push = SupportPush(userInfo: [
            "messageId": "1311000000000000001", "aps": ["alert": ["title": "Support"], "badge": 3, "thread-id": "user-1"] as [String: Any],
        ])
        #expect(push == SupportPush(messageID: "1311000000000000001", badge: 3, userID: "user-1", isSilent: false))
        let silent = SupportPush(userInfo: ["messageId": "42", "aps": ["content-available": 1, "badge": 2] as [String: Any]])
        #expect(silent?.isSilent == true && silent?.badge == 2)
        #expect(SupportPush(userInfo: ["aps": ["alert": "Sale!"]]) == nil)
        #expect(SupportPush(userInfo: ["messageId": "12ab"]) == nil)
        #expect(SupportPush(userInfo: ["messageId": String(repeating: "9", count: 40)]) == nil)
        #expect(ThreadDeskClient.messageID(fromPush: ["messageId": "42"]) == "42")
    }
}

/// A small seeded generator: the same operations on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
