import Foundation
import Testing
import ThreadDeskCore

@Suite("Suggestions ranking")
struct SuggestionsTests {
    static let answers = [
        CuratedAnswer(
            id: "1", title: "I can't connect my TV",
            text: "Open Settings › Devices and tap Add by hand. Enter the TV's address.", keywords: ["television", "pairing"]),
        CuratedAnswer(id: "2", title: "How do I reset my password?", text: "Tap Forgot password on the sign-in screen.", keywords: ["login"]),
        CuratedAnswer(id: "3", title: "Export to CSV", text: "Use File › Export and pick CSV. Works on every device.", keywords: ["spreadsheet"]),
        CuratedAnswer(id: "4", title: "Café mode", text: "Lowers the brightness in the evening.", keywords: ["night shift"]),
        CuratedAnswer(id: "5", title: "Cancel my subscription", text: "Subscriptions are managed by the App Store.", keywords: ["refund", "billing"]),
        CuratedAnswer(id: "6", title: "Connect a printer", text: "Printers connect over Wi-Fi.", keywords: []),
    ]
    let index = SuggestionIndex(Self.answers)

    func ids(_ query: String) -> [String] { index.suggestions(for: query).map(\.id) }

    @Test func misspelledQueryFindsTheAnswer() {
        #expect(ids("cant conect tv").first == "1")
        #expect(ids("I can't connect my TV").first == "1")
        #expect(ids("pasword reset").first == "2")
    }

    @Test func caseAccentsAndApostrophesCountForNothing() {
        #expect(ids("CAFE").first == "4")
        #expect(ids("café").first == "4")
        #expect(ids("CAN’T CONNECT").first == "1")
    }

    @Test func theWordBeingTypedMatchesAsAPrefix() {
        #expect(ids("export to cs").first == "3")
        #expect(ids("subscr").first == "5")
        // A finished word is no prefix: "subscr " is a word of its own, matching nothing.
        #expect(ids("subscr ").isEmpty)
    }

    @Test func keywordsAndTagsFindAnswers() {
        #expect(ids("refund please").first == "5")
        #expect(ids("spreadsheet").first == "3")
        #expect(ids("night shift").first == "4")
    }

    @Test func phrasesInOrderRankAbove() {
        // "connect" is in answers 1 and 6; "connect printer" in order is answer 6's title.
        #expect(ids("connect printer").first == "6")
        #expect(ids("connect tv").first == "1")
    }

    @Test func nothingForNoiseOrStopWords() {
        #expect(ids("").isEmpty)
        #expect(ids("the my a").isEmpty)
        #expect(ids("xyzzy qwerty").isEmpty)
        // Short words get no typo allowance.
        #expect(ids("tc").isEmpty)
    }

    @Test func atMostFiveDeterministically() {
        let many = (0..<20).map { CuratedAnswer(id: String(format: "%02d", $0), title: "Sync problem \($0)", text: "sync") }
        let index = SuggestionIndex(many)
        let first = index.suggestions(for: "sync")
        #expect(first.count == 5)
        #expect(first.map(\.id) == ["00", "01", "02", "03", "04"])
        #expect(index.suggestions(for: "sync", limit: 2).count == 2)
    }

    @Test func oneEditAway() {
        func near(_ a: String, _ b: String) -> Bool {
            SuggestionIndex([CuratedAnswer(id: "x", title: b, text: "")]).suggestions(for: a + " ").count == 1
        }
        #expect(near("conect", "connect"))
        #expect(near("connecct", "connect"))
        #expect(near("connetc", "connect"))
        #expect(near("connexion", "connexion"))
        #expect(!near("conet", "connect"))
        #expect(!near("tc", "tv"))
    }

    @Test func keywordLineOfAPost() {
        let post = CuratedAnswer.post(
            id: "9", title: "TV", starter: "Add it by hand.\n\nKeywords: smart tv, chromecast ,\n", tagNames: ["devices"])
        #expect(post.text == "Add it by hand.")
        #expect(post.keywords == ["devices", "smart tv", "chromecast"])
        let plain = CuratedAnswer.post(id: "9", title: "TV", starter: "keywords: are words\nmore", tagNames: [])
        #expect(plain.text == "keywords: are words\nmore")
        #expect(plain.keywords.isEmpty)
    }

    @Test func hostileInputEnds() {
        let long = String(repeating: "connect ", count: 10_000)
        #expect(ids(long).first != nil)
        #expect(ids(String(repeating: "'", count: 1000)).isEmpty)
        #expect(SuggestionIndex([]).suggestions(for: "tv").isEmpty)
    }
}
