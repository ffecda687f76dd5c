// `bench/suggestions.sh`: how many suggestions per second `SuggestionIndex` ranks over 1,000
// curated answers (release build, one core), and how long building the index takes. Prints one
// JSON line. The answers and queries are made from a fixed seed, so runs compare.
import Foundation

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@main
struct SuggestionsBench {
    static func main() {
        let arguments = CommandLine.arguments
        let answersCount = arguments.count > 1 ? Int(arguments[1]) ?? 1000 : 1000
        let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 3 : 3
        var random = SeededGenerator(state: 29)
        // A vocabulary of 4,000 made-up words of 3–10 letters, some accented, plus real ones.
        let letters = Array("abcdefghijklmnopqrstuvwxyzéè")
        var vocabulary = ["connect", "tv", "password", "reset", "export", "csv", "subscription", "refund", "sync", "crash", "login", "account"]
        while vocabulary.count < 4000 {
            vocabulary.append(String((0..<Int.random(in: 3...10, using: &random)).map { _ in letters.randomElement(using: &random)! }))
        }
        func sentence(_ words: ClosedRange<Int>) -> String {
            (0..<Int.random(in: words, using: &random)).map { _ in vocabulary.randomElement(using: &random)! }.joined(separator: " ")
        }
        let answers = (0..<answersCount).map { number in
            CuratedAnswer(id: String(number), title: sentence(3...8), text: sentence(30...120), keywords: (0..<3).map { _ in sentence(1...2) })
        }
        // Queries as a user types them: two to six words from the answers' titles, with typos and
        // the last word cut short.
        var queries: [String] = []
        for _ in 0..<1000 {
            var words = answers.randomElement(using: &random)!.title.split(separator: " ").map(String.init).shuffled(using: &random)
            words = Array(words.prefix(Int.random(in: 2...6, using: &random)))
            if let index = words.indices.randomElement(using: &random), words[index].count >= 5 {
                var word = Array(words[index])
                word.remove(at: Int.random(in: 0..<word.count, using: &random))
                words[index] = String(word)
            }
            if let last = words.last, last.count > 3 { words[words.count - 1] = String(last.prefix(last.count - 1)) }
            queries.append(words.joined(separator: " "))
        }

        let clock = ContinuousClock()
        let buildStart = clock.now
        let index = SuggestionIndex(answers)
        let build = clock.now - buildStart
        var ranked = 0
        var found = 0
        let start = clock.now
        let deadline = start.advanced(by: .milliseconds(Int(seconds * 1000)))
        while clock.now < deadline {
            for offset in 0..<100 where !index.suggestions(for: queries[(ranked + offset) % queries.count]).isEmpty {
                found += 1
            }
            ranked += 100
        }
        let ran = clock.now - start
        // What the queries found, as one number: two builds that rank alike print the same one.
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for query in queries {
            for byte in index.suggestions(for: query).map(\.id).joined(separator: ",").utf8 + [0] {
                digest = (digest ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }

        let elapsed = Double(ran.components.attoseconds) / 1e18 + Double(ran.components.seconds)
        let buildMs = Double(build.components.attoseconds) / 1e15 + Double(build.components.seconds) * 1000
        print(
            #"{"answers": \#(answersCount), "queries": \#(ranked), "seconds": \#(String(format: "%.2f", elapsed)), "perSecond": \#(Int(Double(ranked) / elapsed)), "withResults": \#(String(format: "%.3f", Double(found) / Double(ranked))), "indexBuildMs": \#(String(format: "%.1f", buildMs)), "resultsDigest": "\#(String(digest, radix: 16))"}"#)
    }
}
