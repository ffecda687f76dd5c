import Testing

@testable import ThreadDeskCore

/// The index's lookups stand for a scan of the vocabulary: for any typed word they find exactly the
/// words (and qualities) that asking `match` of every word finds, and the ASCII shortcut splits a
/// text as Foundation's folding does.
@Suite("Suggestions: the index's lookups")
struct SuggestionIndexLookupTests {
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
    }

    /// Words from a small alphabet, so that near words (typos, prefixes, swaps) are common.
    static func word(_ random: inout Generator, letters: [Character] = Array("abcdeé")) -> String {
        String((0..<Int.random(in: 1...8, using: &random)).map { _ in letters.randomElement(using: &random)! })
    }

    @Test func lookupsFindWhatAScanOfTheVocabularyFinds() {
        var random = Generator(state: 45)
        let answers = (0..<30).map { number in
            CuratedAnswer(
                id: String(number), title: (0..<4).map { _ in Self.word(&random) }.joined(separator: " "),
                text: (0..<12).map { _ in Self.word(&random) }.joined(separator: " "), keywords: [Self.word(&random)])
        }
        let index = SuggestionIndex(answers)
        var typed = index.vocabularyWords
        for _ in 0..<500 { typed += SuggestionIndex.words(Self.word(&random)) }
        // Edits of known words: swaps, deletions, insertions, substitutions.
        for word in index.vocabularyWords where word.count >= 2 {
            var swapped = word
            swapped.swapAt(0, 1)
            typed += [swapped, Array(word.dropFirst()), word + [98], [99] + word.dropFirst()]
        }
        var compared = 0
        var matched = 0
        for query in typed {
            for prefix in [false, true] {
                let found = index.matchingWords(query, prefix: prefix)
                let scanned = index.scannedMatchingWords(query, prefix: prefix)
                #expect(found.map(\.word) == scanned.map(\.word), "\(query) prefix \(prefix)")
                #expect(found.map(\.quality) == scanned.map(\.quality), "\(query) prefix \(prefix)")
                compared += 1
                if !found.isEmpty { matched += 1 }
            }
        }
        // The comparison meant something: most typed words matched some word, one way or another.
        #expect(compared > 2_000)
        #expect(matched > compared / 2)
    }

    @Test func asciiTextSplitsAsFoundationFoldsIt() {
        var random = Generator(state: 7)
        let letters = Array("aZ9 '-.,!?\t\nQm_x")
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...30, using: &random)).map { _ in letters.randomElement(using: &random)! })
            #expect(SuggestionIndex.asciiWords(text) == SuggestionIndex.foldedWords(text), "\(text.debugDescription)")
        }
        #expect(SuggestionIndex.asciiWords("café") == nil)
        #expect(SuggestionIndex.asciiWords("CAN’T") == nil)
        #expect(SuggestionIndex.words("Can't CONNECT") == [Array("cant".unicodeScalars.map(\.value)), Array("connect".unicodeScalars.map(\.value))])
    }

    @Test func asciiScalarsAreWordScalarsAsTheirPropertiesSay() {
        for value in UInt32(0)..<128 {
            let scalar = Unicode.Scalar(value)!
            #expect(SuggestionIndex.isWordScalar(scalar) == (scalar.properties.isAlphabetic || scalar.properties.numericType != nil), "\(value)")
        }
    }
}
