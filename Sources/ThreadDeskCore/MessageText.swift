import Foundation

/// Rules for the text a user sends: trimmed, 1–4000 characters (and at most four Discord posts
/// long), cut into Discord-sized posts.
public enum MessageText {
    public static let maxCharacters = 4000
    /// Discord's limit per message. Counted in UTF-16 code units, which is never less than
    /// Discord's own count, so a chunk that fits here fits there.
    public static let discordLimit = 2000
    /// However few characters it has, a text longer than this (in UTF-16 units) is refused: it
    /// would take more than four posts.
    public static let maxUTF16Units = 4 * discordLimit
    /// No real character (an emoji family with skin tones included) has more scalars than this;
    /// stacks of combining marks do, and they are refused.
    public static let maxScalarsPerCharacter = 32

    public enum Problem: Error, Equatable {
        case empty
        case tooLong(Int)
        case tooLongForDiscord(utf16Units: Int)
        case characterTooComplex
        /// A control character other than a line break or a tab (``ControlCharacters``).
        case controlCharacter(Unicode.Scalar)
    }

    /// The text as it will be posted, or why it cannot be.
    public static func validate(_ raw: String) -> Result<String, Problem> {
        if let control = ControlCharacters.first(in: raw) { return .failure(.controlCharacter(control)) }
        let text = raw.trimmingWhitespace()
        if text.isEmpty { return .failure(.empty) }
        let units = text.utf16.count
        if units > maxUTF16Units { return .failure(.tooLongForDiscord(utf16Units: units)) }
        var characters = 0
        for character in text {
            characters += 1
            if character.unicodeScalars.count > maxScalarsPerCharacter { return .failure(.characterTooComplex) }
        }
        if characters > maxCharacters { return .failure(.tooLong(characters)) }
        return .success(text)
    }

    /// Splits `text` into posts of at most `limit` UTF-16 units (2 or more: any scalar fits),
    /// preferring a paragraph break, then a line break, then a space, and never cutting a
    /// character (emoji, flags) in two unless it alone is wider than a post.
    public static func split(_ text: String, limit: Int = discordLimit) -> [String] {
        var chunks: [String] = []
        var rest = Substring(text)
        while rest.utf16.count > limit {
            var end = rest.startIndex
            var units = 0
            for index in rest.indices {
                let width = rest[index].utf16.count
                if units + width > limit { break }
                units += width
                end = rest.index(after: index)
            }
            if end == rest.startIndex {
                // One character wider than a whole post: cut it between scalars, or nothing fits.
                // (Slicing the character view would round the cut back to where it started.)
                let boundary = Self.scalarBoundary(in: rest, limit: limit)
                chunks.append(String(rest.unicodeScalars[..<boundary]))
                rest = Substring(rest.unicodeScalars[boundary...])
                continue
            }
            let window = rest[..<end]
            let cut = [window.range(of: "\n\n", options: .backwards), window.range(of: "\n", options: .backwards),
                       window.range(of: " ", options: .backwards)]
                .compactMap { $0 }
                .first { window.distance(from: window.startIndex, to: $0.lowerBound) > window.count / 2 }
            let chunkEnd = cut?.lowerBound ?? end
            chunks.append(String(rest[..<chunkEnd]).trimmingWhitespace())
            rest = rest[(cut?.upperBound ?? end)...]
            rest = rest.drop { $0.isNewline && $0.isOnlyWhitespace }
        }
        let last = String(rest).trimmingWhitespace()
        if !last.isEmpty || chunks.isEmpty { chunks.append(last) }
        return chunks.filter { !$0.isEmpty }
    }
}

extension MessageText {
    /// The end of the longest prefix of `text` that fits in `limit` UTF-16 units, cut between
    /// Unicode scalars (at least one scalar, so splitting always moves on).
    static func scalarBoundary(in text: Substring, limit: Int) -> String.Index {
        var end = text.unicodeScalars.startIndex
        var units = 0
        for index in text.unicodeScalars.indices {
            units += text.unicodeScalars[index].utf16.count
            if units > limit && end > text.unicodeScalars.startIndex { break }
            end = text.unicodeScalars.index(after: index)
        }
        return end
    }

    /// The longest prefix of whole characters that fits in `limit` UTF-16 units, marked with `…` when cut.
    public static func clip(_ text: String, limit: Int = discordLimit) -> String {
        guard text.utf16.count > limit else { return text }
        var result = ""
        var units = 1
        for character in text {
            units += character.utf16.count
            if units > limit { break }
            result.append(character)
        }
        return result + "…"
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isOnlyWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isOnlyWhitespace { slice.removeLast() }
        return String(slice)
    }
}

extension Character {
    /// Whitespace and nothing else: a space carrying a combining mark is text to keep (found by
    /// the fuzzer: trimming at a cut dropped the mark).
    var isOnlyWhitespace: Bool { unicodeScalars.allSatisfy(\.properties.isWhitespace) }
}
