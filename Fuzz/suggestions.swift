// Fuzz target: the suggestions ranking. Any bytes split into answers and a query rank in bounded
// time, give at most five distinct answers, and an answer's own title always finds it; the best
// match is the first suggestion, with a coverage in 0…1.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSuggestions(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let parts = text.split(separator: "\u{1}", omittingEmptySubsequences: false).map(String.init)
    let query = parts.first ?? ""
    let answers = parts.dropFirst().enumerated().map { number, part in
        CuratedAnswer.post(id: String(number), title: part, starter: part, tagNames: [])
    }
    let index = SuggestionIndex(answers)
    let found = index.suggestions(for: query)
    precondition(found.count <= SuggestionIndex.maxResults, "more than five suggestions")
    precondition(Set(found.map(\.id)).count == found.count, "an answer suggested twice")
    let best = index.bestMatch(for: query)
    precondition(best?.answer == index.suggestions(for: query, limit: 1).first, "the best match is not the first suggestion")
    if let coverage = best?.coverage {
        precondition(coverage.isFinite && coverage > 0 && coverage <= 1, "coverage out of 0…1: \(coverage)")
    }
    for answer in answers.prefix(3) {
        let own = index.suggestions(for: answer.title + " ")
        let words = SuggestionIndex.words(answer.title).filter { !SuggestionIndex.isStopWord($0) }
        if !words.isEmpty && answers.count <= SuggestionIndex.maxResults {
            precondition(own.contains { $0.id == answer.id }, "an answer's title does not find it")
        }
    }
    return 0
}
