import Testing

@testable import ThreadDeskCore

/// The help center's search: every match in the suggestions' order, whichever way the ranking
/// keeps its best (inserting into a short list, or one sort for a long one).
@Suite("Suggestions: the whole ranking")
struct RankedSearchTests {
    @Test func theWholeRankingStartsWithTheSuggestionsAndAgreesAtEveryLength() {
        var random = SuggestionIndexLookupTests.Generator(state: 61)
        let answers = (0..<200).map { number in
            CuratedAnswer(
                id: String(number), title: (0..<4).map { _ in SuggestionIndexLookupTests.word(&random) }.joined(separator: " "),
                text: (0..<12).map { _ in SuggestionIndexLookupTests.word(&random) }.joined(separator: " "))
        }
        let index = SuggestionIndex(answers)
        for _ in 0..<40 {
            let query = (0..<2).map { _ in SuggestionIndexLookupTests.word(&random) }.joined(separator: " ")
            let all = index.ranked(for: query, limit: .max).map(\.id)
            #expect(Array(all.prefix(SuggestionIndex.maxResults)) == index.suggestions(for: query).map(\.id), "\(query)")
            #expect(Set(all).count == all.count, "\(query)")
            // Short lists are kept by insertion, long ones by a sort: the same order either way.
            for limit in [1, 7, 20, 21, 60] {
                #expect(index.ranked(for: query, limit: limit).map(\.id) == Array(all.prefix(limit)), "\(query), \(limit)")
            }
        }
        #expect(index.ranked(for: "", limit: 10).isEmpty)
        #expect(SuggestionIndex([]).ranked(for: "anything", limit: .max).isEmpty)
    }
}
