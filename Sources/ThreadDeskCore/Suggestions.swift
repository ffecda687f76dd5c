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
/// (words folded and indexed), then asked as often as the user types: a query looks its words up,
/// it scans neither the answers nor the vocabulary. Case, accents and apostrophes count for
/// nothing; a word of 4 letters or more matches one edit away; the word being typed (no space
/// after it yet) matches as a prefix. A word in the title or the keywords weighs more than one in
/// the answer, rare words more than common ones, and query words that follow each other as in the
/// title or a keyword phrase add to the score.
///
/// The lookups: the vocabulary by word (the same word), the vocabulary in sorted order (the words
/// a typed prefix starts, one binary search), and the words of 4 letters or more under each of
/// their one-letter deletions and themselves (two words one edit apart, a swap of neighbours
/// included, share one of those keys, so a typed word's own deletions find every candidate; each
/// is then checked exactly, so a shared key that means nothing costs a check, never a result).
public struct SuggestionIndex: Sendable {
    public static let maxResults = 5
    /// Query words looked at: a long paragraph is ranked by its first words.
    static let maxQueryWords = 16

    private struct Posting: Sendable { var answer: Int32; var weight: Float }

    private let answers: [CuratedAnswer]
    private let words: [[UInt32]]
    /// Each vocabulary word's index by the word.
    private let vocabulary: [[UInt32]: Int]
    /// The vocabulary's indexes, the words in lexicographic order (prefix ranges).
    private let sorted: [Int32]
    /// Words of 4 letters or more under the key of each deletion of one letter and of the word
    /// itself (`deletionKey`); keys may collide, candidates are checked.
    private let neighbours: [UInt64: [Int32]]
    /// The longest vocabulary word's length: a typed word longer by two or more is one edit from none.
    private let longestWord: Int
    private let postings: [[Posting]]
    private let rarity: [Float]
    /// Where two vocabulary words follow each other in a title (sequence 0) or a keyword phrase
    /// (sequence 1, 2, …), by the pair (`pairKey`).
    private struct PhrasePlace: Sendable { var answer: Int32; var sequence: Int16; var offset: Int16 }
    private let pairs: [UInt64: [PhrasePlace]]

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
        self.vocabulary = vocabulary
        self.sorted = words.indices.sorted { words[$0].lexicographicallyPrecedes(words[$1]) }.map { Int32($0) }
        var neighbours: [UInt64: [Int32]] = [:]
        for (number, word) in words.enumerated() where word.count >= Self.editableLength {
            for skipped in -1..<word.count {
                neighbours[Self.deletionKey(word, skipping: skipped), default: []].append(Int32(number))
            }
        }
        self.neighbours = neighbours
        self.longestWord = words.map(\.count).max() ?? 0
        self.words = words
        self.postings = postings
        var pairs: [UInt64: [PhrasePlace]] = [:]
        for answer in answers.indices {
            for (sequence, words) in ([titleWords[answer]] + phrases[answer]).enumerated() where words.count >= 2 {
                for offset in 0..<(words.count - 1) {
                    pairs[Self.pairKey(words[offset], words[offset + 1]), default: []].append(
                        PhrasePlace(answer: Int32(answer), sequence: Int16(clamping: sequence), offset: Int16(clamping: offset)))
                }
            }
        }
        self.pairs = pairs
    }

    /// The best answers for `query`, best first, at most `limit` (1…5); none for a query with no
    /// word worth matching.
    public func suggestions(for query: String, limit: Int = SuggestionIndex.maxResults) -> [CuratedAnswer] {
        rank(query, limit: min(max(limit, 1), Self.maxResults)).ranked.map { answers[$0.answer] }
    }

    /// Every answer that matches `query` in `suggestions`' order, at most `limit`: the help
    /// center's search pages through it, so its first five are the suggestions.
    public func ranked(for query: String, limit: Int) -> [CuratedAnswer] {
        rank(query, limit: min(max(limit, 1), max(answers.count, 1))).ranked.map { answers[$0.answer] }
    }

    /// The answer `suggestions(for: query, limit: 1)` puts first, and how much of the query it
    /// covers, 0 to 1: each content word (stop words aside, the first 16 words as ranked) counts
    /// its match quality with the answer (1 the same word, 0.8 the prefix being typed, 0.6 one
    /// edit away, 0 none), weighted by its rarity (`coverageWeight`). Unlike a score, it means
    /// the same in a forum of any size. nil when no answer matches or the query has no content word.
    public func bestMatch(for query: String) -> (answer: CuratedAnswer, coverage: Double)? {
        let ranking = rank(query, limit: 1)
        guard let best = ranking.ranked.first?.answer else { return nil }
        var whole = 0.0
        var covered = 0.0
        for (position, reach) in ranking.reach.enumerated() {
            guard let reach else { continue }
            let weight = Self.coverageWeight(reach: reach)
            whole += weight
            covered += weight * Double(quality(of: best, among: ranking.matches[position]))
        }
        guard whole > 0 else { return nil }
        return (answers[best], min(max(covered / whole, 0), 1))
    }

    /// A query word's weight in `bestMatch`'s coverage, by the number of answers it matches:
    /// 1 for a word one answer (or none) has, less the more answers have it. Not the ranking's
    /// `rarity`: that one, 1 + log(1 + answers / reach), grows with the forum, so answers that
    /// share no word with the query would flatten the weights and move a coverage (a word in
    /// one answer against one in two: 0.55 of the query among 3 answers, 0.53 among 500).
    static func coverageWeight(reach: Int) -> Double { 1 / (1 + log(Double(max(reach, 1)))) }

    /// The best match quality of `answer` among a query word's matches: its postings are in
    /// answer order, so each is a binary search.
    private func quality(of answer: Int, among matches: [(word: Int, quality: Float)]) -> Float {
        var found: Float = 0
        for (word, quality) in matches where quality > found {
            let list = postings[word]
            var low = 0
            var high = list.count
            while low < high {
                let middle = (low + high) / 2
                if Int(list[middle].answer) < answer { low = middle + 1 } else { high = middle }
            }
            if low < list.count && Int(list[low].answer) == answer { found = quality }
        }
        return found
    }

    /// What ranking a query found: the best `limit` answers, best first, and per query word
    /// (its first 16) the vocabulary words it matches and how many answers those hold (nil: a
    /// stop word, which counts for nothing).
    private struct Ranking {
        var ranked: [(answer: Int, score: Float)] = []
        var matches: [[(word: Int, quality: Float)]] = []
        var reach: [Int?] = []
    }

    private func rank(_ query: String, limit: Int) -> Ranking {
        var typed = Self.words(query)
        let typing = query.unicodeScalars.last.map { Self.isWordScalar($0) } ?? false
        if typed.count > Self.maxQueryWords { typed.removeLast(typed.count - Self.maxQueryWords) }
        guard !typed.isEmpty, !answers.isEmpty else { return Ranking() }
        // Per query word: the vocabulary words it matches, with how well (1 exact … 0.6 a typo).
        var matches: [[(word: Int, quality: Float)]] = Array(repeating: [], count: typed.count)
        var reach: [Int?] = Array(repeating: nil, count: typed.count)
        var scores = [Float](repeating: 0, count: answers.count)
        var best = [Float](repeating: 0, count: answers.count)
        var touched: [Int] = []
        var scored: [Int] = []
        for (position, query) in typed.enumerated() where !Self.isStopWord(query) {
            let prefix = typing && position == typed.count - 1 && query.count >= 2
            matches[position] = matchingWords(query, prefix: prefix)
            for (word, quality) in matches[position] {
                for posting in postings[word] {
                    let value = quality * posting.weight * rarity[word]
                    let answer = Int(posting.answer)
                    if best[answer] == 0 { touched.append(answer) }
                    best[answer] = max(best[answer], value)
                }
            }
            reach[position] = touched.count
            for answer in touched {
                if scores[answer] == 0 { scored.append(answer) }
                scores[answer] += best[answer]
                best[answer] = 0
            }
            touched.removeAll(keepingCapacity: true)
        }
        for (answer, bonus) in phraseBonuses(matches) where scores[answer] > 0 { scores[answer] += bonus }
        // The best `limit`, kept in order as the scores go by (better: higher, then the lower id).
        var ranked: [(answer: Int, score: Float)] = []
        ranked.reserveCapacity(limit + 1)
        func better(_ a: (answer: Int, score: Float), _ b: (answer: Int, score: Float)) -> Bool {
            a.score != b.score ? a.score > b.score : answers[a.answer].id < answers[b.answer].id
        }
        if limit > Self.maxResults * 4 {
            // A long list (the help center's search): one sort beats inserting into a long prefix.
            ranked = scored.filter { scores[$0] > 0 }.map { (answer: $0, score: scores[$0]) }.sorted(by: better)
            if ranked.count > limit { ranked.removeLast(ranked.count - limit) }
            return Ranking(ranked: ranked, matches: matches, reach: reach)
        }
        for answer in scored where scores[answer] > 0 {
            let entry = (answer: answer, score: scores[answer])
            guard ranked.count < limit || better(entry, ranked[ranked.count - 1]) else { continue }
            let place = ranked.firstIndex { better(entry, $0) } ?? ranked.count
            ranked.insert(entry, at: place)
            if ranked.count > limit { ranked.removeLast() }
        }
        return Ranking(ranked: ranked, matches: matches, reach: reach)
    }

    /// The vocabulary words `query` matches and how well (`match`), in vocabulary order: the same
    /// as asking `match` of every word, found through the lookups.
    func matchingWords(_ query: [UInt32], prefix: Bool) -> [(word: Int, quality: Float)] {
        candidates(for: query, prefix: prefix).compactMap { word in
            let quality = Self.match(query, words[word], prefix: prefix)
            return quality > 0 ? (word, quality) : nil
        }
    }

    /// `matchingWords` by asking `match` of every word of the vocabulary (what the lookups stand for).
    func scannedMatchingWords(_ query: [UInt32], prefix: Bool) -> [(word: Int, quality: Float)] {
        words.indices.compactMap { word in
            let quality = Self.match(query, words[word], prefix: prefix)
            return quality > 0 ? (word, quality) : nil
        }
    }

    /// The vocabulary, folded words.
    var vocabularyWords: [[UInt32]] { words }

    /// Every vocabulary word `match` can find for `query` (a superset: each is checked), each once:
    /// the same word, the words it starts (while typed), and those sharing a deletion key with it.
    private func candidates(for query: [UInt32], prefix: Bool) -> [Int] {
        var found: [Int] = []
        if let same = vocabulary[query] { found.append(same) }
        if prefix {
            var low = 0
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if words[Int(sorted[middle])].lexicographicallyPrecedes(query) { low = middle + 1 } else { high = middle }
            }
            while low < sorted.count, words[Int(sorted[low])].starts(with: query) {
                found.append(Int(sorted[low]))
                low += 1
            }
        }
        if query.count >= Self.editableLength, query.count <= longestWord + 1 {
            for skipped in -1..<query.count {
                if let near = neighbours[Self.deletionKey(query, skipping: skipped)] { found.append(contentsOf: near.lazy.map { Int($0) }) }
            }
        }
        guard found.count > 1 else { return found }
        found.sort()
        var unique = 0
        for index in found.indices where index == 0 || found[index] != found[index - 1] {
            found[unique] = found[index]
            unique += 1
        }
        found.removeLast(found.count - unique)
        return found
    }

    /// Words shorter than this match only themselves or as a prefix, never one edit away.
    static let editableLength = 4

    /// A hash (FNV-1a, 64 bits) of `word` without the letter at `skipped` (-1: the whole word):
    /// `abcd` without `d` has the key of `abc`. Equal letters give equal keys; unequal ones rarely
    /// do, and are told apart by `match`.
    static func deletionKey(_ word: [UInt32], skipping skipped: Int) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, scalar) in word.enumerated() where index != skipped {
            hash = (hash ^ UInt64(scalar)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Per answer, its bonus for consecutive query words found consecutively in its title or a
    /// keyword phrase: per such sequence, the first place found (query position, then place in the
    /// sequence, both from the start) adds twice the two words' match qualities, sequences added
    /// in order. Found through the pairs of the matched words, not by reading every answer.
    private func phraseBonuses(_ matches: [[(word: Int, quality: Float)]]) -> [(answer: Int, bonus: Float)] {
        guard matches.count >= 2 else { return [] }
        // Per answer and sequence (`answer << 16 | sequence`): the first place found and its bonus.
        var first: [Int: (start: Int, offset: Int16, bonus: Float)] = [:]
        for start in 0..<(matches.count - 1) where !matches[start].isEmpty && !matches[start + 1].isEmpty {
            for (word, quality) in matches[start] {
                for (next, nextQuality) in matches[start + 1] {
                    guard let places = pairs[Self.pairKey(word, next)] else { continue }
                    for place in places {
                        let key = Int(place.answer) << 16 | Int(place.sequence)
                        if let known = first[key], (known.start, known.offset) <= (start, place.offset) { continue }
                        first[key] = (start, place.offset, 2 * (quality + nextQuality))
                    }
                }
            }
        }
        // Each answer's sequences added in their order.
        var bonuses: [(answer: Int, bonus: Float)] = []
        for (key, found) in first.sorted(by: { $0.key < $1.key }) {
            let answer = key >> 16
            if bonuses.last?.answer == answer {
                bonuses[bonuses.count - 1].bonus += found.bonus
            } else {
                bonuses.append((answer, found.bonus))
            }
        }
        return bonuses
    }

    private static func pairKey(_ first: Int, _ second: Int) -> UInt64 { UInt64(first) << 32 | UInt64(UInt32(truncatingIfNeeded: second)) }

    // MARK: Words

    /// The text's words, folded: lower case, no accents, no apostrophes (`can't` is `cant`).
    static func words(_ text: String) -> [[UInt32]] {
        asciiWords(text) ?? foldedWords(text)
    }

    /// `words` through Foundation's folding, for any text.
    static func foldedWords(_ text: String) -> [[UInt32]] {
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

    /// `words` of a text that is all ASCII (most of what users type), without Foundation's
    /// folding, which leaves ASCII as lower case does; nil for any other text.
    static func asciiWords(_ text: String) -> [[UInt32]]? {
        var result: [[UInt32]] = []
        var current: [UInt32] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): current.append(UInt32(byte))
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): current.append(UInt32(byte + 32))
            case UInt8(ascii: "'"): continue
            case 0x80...: return nil
            default:
                if !current.isEmpty {
                    result.append(current)
                    current = []
                }
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            // The same answer as the properties give, without looking them up.
            let value = scalar.value
            return (0x61...0x7A).contains(value) || (0x41...0x5A).contains(value) || (0x30...0x39).contains(value)
        }
        return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
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
