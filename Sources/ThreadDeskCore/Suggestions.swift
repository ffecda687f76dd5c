import Foundation

/// One curated answer: a post of the FAQ forum. The title is the question, the text the answer,
/// the keywords (its tags' names and a last line `keywords: a, b`) the phrases that should find it.
public struct CuratedAnswer: Sendable, Hashable {
    public var id: String
    public var title: String
    public var text: String
    public var keywords: [String]

    public init(id: String, title: String, text: String, keywords: [String] = []) {
        self.id = id
        self.title = title
        self.text = text
        self.keywords = keywords
    }

    /// A FAQ post as Discord holds it: a last line `keywords: a, b, c` (any case) is taken out of
    /// the answer and added to the tags' names.
    public static func post(id: String, title: String, starter: String, tagNames: [String]) -> CuratedAnswer {
        var lines = starter.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while let last = lines.last, last.trimmingCharacters(in: .whitespaces).isEmpty { lines.removeLast() }
        var keywords = tagNames
        if let last = lines.last {
            let trimmed = last.trimmingCharacters(in: .whitespaces)
            if trimmed.lowercased().hasPrefix("keywords:") {
                lines.removeLast()
                keywords += trimmed.dropFirst("keywords:".count).split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
        }
        let text = lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        return CuratedAnswer(id: id, title: title, text: text, keywords: keywords)
    }
}

/// Ranks curated answers against what a user has typed so far. Built once per set of answers
/// (words folded and indexed), then asked as often as the user types: a query scans the distinct
/// words, not the answers. Case, accents and apostrophes count for nothing; a word of 4 letters
/// or more matches one edit away; the word being typed (no space after it yet) matches as a
/// prefix. A word in the title or the keywords weighs more than one in the answer, rare words
/// more than common ones, and query words that follow each other as in the title or a keyword
/// phrase add to the score.
public struct SuggestionIndex: Sendable {
    public static let maxResults = 5
    /// Query words looked at: a long paragraph is ranked by its first words.
    static let maxQueryWords = 16

    private struct Posting: Sendable { var answer: Int32; var weight: Float }

    private let answers: [CuratedAnswer]
    private let words: [[UInt32]]
    private let postings: [[Posting]]
    private let rarity: [Float]
    /// Per answer: the title's words as vocabulary indexes, and each keyword phrase's.
    private let titleWords: [[Int]]
    private let phrases: [[[Int]]]

    public var count: Int { answers.count }

    public init(_ answers: [CuratedAnswer]) {
        self.answers = answers
        var vocabulary: [[UInt32]: Int] = [:]
        var words: [[UInt32]] = []
        var postings: [[Posting]] = []
        var titleWords: [[Int]] = []
        var phrases: [[[Int]]] = []
        func index(_ word: [UInt32]) -> Int {
            if let known = vocabulary[word] { return known }
            vocabulary[word] = words.count
            words.append(word)
            postings.append([])
            return words.count - 1
        }
        for (number, answer) in answers.enumerated() {
            var weights: [Int: Float] = [:]
            func add(_ text: String, weight: Float) -> [Int] {
                let found = Self.words(text).map(index)
                for word in found where !Self.isStopWord(words[word]) { weights[word] = max(weights[word] ?? 0, weight) }
                return found
            }
            titleWords.append(add(answer.title, weight: 3))
            phrases.append(answer.keywords.map { add($0, weight: 3) })
            _ = add(answer.text, weight: 1)
            for (word, weight) in weights { postings[word].append(Posting(answer: Int32(number), weight: weight)) }
        }
        let total = Float(max(answers.count, 1))
        self.rarity = postings.map { 1 + log(1 + total / Float(max($0.count, 1))) }
        self.words = words
        self.postings = postings
        self.titleWords = titleWords
        self.phrases = phrases
    }

    /// The best answers for `query`, best first, at most `limit` (1…5); none for a query with no
    /// word worth matching.
    public func suggestions(for query: String, limit: Int = SuggestionIndex.maxResults) -> [CuratedAnswer] {
        let limit = min(max(limit, 1), Self.maxResults)
        var typed = Self.words(query)
        let typing = query.unicodeScalars.last.map { Self.isWordScalar($0) } ?? false
        if typed.count > Self.maxQueryWords { typed.removeLast(typed.count - Self.maxQueryWords) }
        guard !typed.isEmpty, !answers.isEmpty else { return [] }
        // Per query word: the vocabulary words it matches, with how well (1 exact … 0.6 a typo).
        var matches: [[Int: Float]] = Array(repeating: [:], count: typed.count)
        var scores = [Float](repeating: 0, count: answers.count)
        for (position, query) in typed.enumerated() where !Self.isStopWord(query) {
            let prefix = typing && position == typed.count - 1 && query.count >= 2
            var best = [Float](repeating: 0, count: answers.count)
            var touched: [Int] = []
            for (word, candidate) in words.enumerated() {
                let quality = Self.match(query, candidate, prefix: prefix)
                guard quality > 0 else { continue }
                matches[position][word] = quality
                for posting in postings[word] {
                    let value = quality * posting.weight * rarity[word]
                    let answer = Int(posting.answer)
                    if best[answer] == 0 { touched.append(answer) }
                    best[answer] = max(best[answer], value)
                }
            }
            for answer in touched { scores[answer] += best[answer] }
        }
        var ranked: [(answer: Int, score: Float)] = []
        for (answer, score) in scores.enumerated() where score > 0 {
            ranked.append((answer, score + phraseBonus(answer, matches)))
        }
        ranked.sort { $0.score != $1.score ? $0.score > $1.score : answers[$0.answer].id < answers[$1.answer].id }
        return ranked.prefix(limit).map { answers[$0.answer] }
    }

    /// Consecutive query words found consecutively in the title or a keyword phrase.
    private func phraseBonus(_ answer: Int, _ matches: [[Int: Float]]) -> Float {
        guard matches.count >= 2 else { return 0 }
        var bonus: Float = 0
        for sequence in [titleWords[answer]] + phrases[answer] where sequence.count >= 2 {
            var found = false
            for start in 0..<(matches.count - 1) where !found {
                for offset in 0..<(sequence.count - 1) where !found {
                    if let first = matches[start][sequence[offset]], let second = matches[start + 1][sequence[offset + 1]] {
                        bonus += 2 * (first + second)
                        found = true
                    }
                }
            }
        }
        return bonus
    }

    // MARK: Words

    /// The text's words, folded: lower case, no accents, no apostrophes (`can't` is `cant`).
    static func words(_ text: String) -> [[UInt32]] {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
        var result: [[UInt32]] = []
        var current: [UInt32] = []
        for scalar in folded.unicodeScalars {
            if isWordScalar(scalar) {
                current.append(scalar.value)
            } else if scalar == "'" || scalar == "\u{2019}" || scalar == "\u{02BC}" {
                continue
            } else if !current.isEmpty {
                result.append(current)
                current = []
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || scalar.properties.numericType != nil
    }

    private static let stopWords: Set<[UInt32]> = Set(
        ["a", "an", "the", "i", "my", "me", "to", "is", "it", "of", "on", "in", "and", "or", "do", "does", "how",
         "what", "can", "be", "for", "with", "at", "this", "that", "you", "your", "im", "am", "are", "we"]
            .map { $0.unicodeScalars.map(\.value) })

    static func isStopWord(_ word: [UInt32]) -> Bool { stopWords.contains(word) }

    /// How well a typed word matches a word of an answer: 1 the same, 0.8 a prefix of it (the
    /// word being typed), 0.6 one edit away (both 4 letters or more), else 0.
    static func match(_ typed: [UInt32], _ word: [UInt32], prefix: Bool) -> Float {
        if typed == word { return 1 }
        if prefix && typed.count < word.count && word.starts(with: typed) { return 0.8 }
        if typed.count >= 4 && word.count >= 4 && abs(typed.count - word.count) <= 1 && withinOneEdit(typed, word) { return 0.6 }
        return 0
    }

    /// Levenshtein distance ≤ 1 (or one swap of neighbours), in one pass.
    static func withinOneEdit(_ a: [UInt32], _ b: [UInt32]) -> Bool {
        if a.count == b.count {
            var first = -1
            for index in a.indices where a[index] != b[index] {
                if first >= 0 {
                    // A second difference: only a swap of the two neighbours passes.
                    return index == first + 1 && a[first] == b[index] && a[index] == b[first]
                        && a[(index + 1)...] == b[(index + 1)...]
                }
                first = index
            }
            return true
        }
        let (short, long) = a.count < b.count ? (a, b) : (b, a)
        guard long.count == short.count + 1 else { return false }
        var i = 0
        var j = 0
        var skipped = false
        while i < short.count && j < long.count {
            if short[i] == long[j] {
                i += 1
                j += 1
            } else {
                if skipped { return false }
                skipped = true
                j += 1
            }
        }
        return true
    }
}
