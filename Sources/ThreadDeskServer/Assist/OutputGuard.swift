import Foundation
import ThreadDeskCore

/// What a model said, made safe to show or send, or refused. Model text is untrusted: it was
/// written under the influence of users' and FAQ authors' words. It is refused when it gives
/// away the prompt (the request's canary, or a long run of the system prompt); otherwise its
/// masked links show where they go and it loses what would make Discord act on it (a leading
/// note or silent marker, mention, channel, role, command and timestamp tags), in that order and
/// again until nothing changes, so showing a link never rebuilds what was taken out; then it is
/// checked for the prompt once more and clipped.
struct OutputGuard: Sendable {
    /// A random word in the system prompt and nowhere else: an answer holding it repeats the prompt.
    let canary: String

    /// A fresh canary: unguessable, so no text written before the request holds it.
    static func newCanary() -> String { "cnry-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20) }
    let systemPrompt: String
    /// The longest text kept, in UTF-16 units (Discord counts so).
    let maxCharacters: Int
    /// Whether `check` returns the text as it may be shown (`shown(_:limit:)`, clipped), or as it
    /// came: a reply of several texts in JSON (translations) is read first, and each text is
    /// shown, and checked for the prompt (`leaks`), on its own.
    var shapesText = true

    enum Refusal: String, Error, Sendable {
        /// The answer repeats the prompt.
        case leak
        /// Nothing is left once cleaned.
        case empty
    }

    /// How long a run of the system prompt, once folded, counts as giving it away: longer than
    /// any phrase an honest answer shares with instructions by chance.
    static let leakRun = 48

    /// What is read of an answer past the longest kept, in UTF-16 units: what lies beyond is
    /// never shown, and the cleaning's rounds each read all that is kept.
    static let readMargin = 1024
    /// Rounds of cleaning an answer may take: an honest one settles in one or two; one that is
    /// still changing after these was built to (each round can undo one layer), and is refused.
    static let maxRounds = 8

    /// The text as it may be shown, or why not. Only what may be shown is read: the first
    /// `maxCharacters` and a margin (a model can answer with a mebibyte).
    func check(_ text: String) -> Result<String, Refusal> {
        guard shapesText else { return text.isEmpty ? .failure(.empty) : .success(text) }
        if leaks(MessageText.clip(text, limit: maxCharacters + Self.readMargin)) { return .failure(.leak) }
        guard let shown = Self.shown(text, limit: maxCharacters) else { return .failure(.empty) }
        // Taking a tag out can join the canary's pieces (`zq-<@1>canary`): the final text is checked too.
        if leaks(shown) { return .failure(.leak) }
        guard !shown.isEmpty else { return .failure(.empty) }
        return .success(MessageText.clip(shown, limit: maxCharacters))
    }

    /// Whether `text` gives the prompt away: the canary (however cased, with invisible characters
    /// or marks in it), or a long run of the system prompt.
    func leaks(_ text: String) -> Bool {
        if !canary.isEmpty, Self.contains(Self.visible(text), Self.visible(canary)) { return true }
        return repeatsSystemPrompt(text)
    }

    /// `text` as the assistant may say it, from its first `limit` UTF-16 units and a margin:
    /// control characters dropped; masked links shown with their address, tags and leading
    /// markers taken out, edges trimmed, and again until nothing changes; then any masked link the
    /// rules could not read broken (a space between `]` and `(`), which takes nothing out and
    /// makes nothing new. Nil when it is still changing after `maxRounds`.
    static func shown(_ text: String, limit: Int) -> String? {
        var text = withoutControlCharacters(MessageText.clip(text, limit: limit + readMargin))
        for _ in 0..<maxRounds {
            var next = unmaskingLinks(text)
            next = withoutTags(next)
            next = NoteMarkers.strippingLeadingMarkers(next).trimmingCharacters(in: .whitespacesAndNewlines)
            if next.unicodeScalars.elementsEqual(text.unicodeScalars) { return breakingMaskedLinks(next) }
            text = next
        }
        return nil
    }

    /// `text` with no `]` right before a `(`, scalar by scalar (a mark on the `(` still leaves
    /// it one to Discord): a masked link is read only where they meet.
    static func breakingMaskedLinks(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            if previous == "]" && scalar == "(" { scalars.append(" ") }
            scalars.append(scalar)
            previous = scalar
        }
        return String(scalars)
    }

    /// A model that writes `\u0000` in its JSON sends a NUL: no control character but line
    /// breaks and tabs is kept (the store would refuse or cut the text).
    static func withoutControlCharacters(_ text: String) -> String {
        guard ControlCharacters.first(in: text) != nil else { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.filter { !ControlCharacters.isRefused($0) })
        return String(scalars)
    }

    /// Lowercased scalars without what shows nothing or rides on another character (invisible
    /// and format characters, variation selectors, combining marks): the canary is ASCII, and
    /// `zq-\u{200B}canary` still reads as it.
    static func visible(_ text: String) -> [Unicode.Scalar] {
        text.lowercased().unicodeScalars.filter { !isIgnorable($0) }
    }

    static func isIgnorable(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .format, .nonspacingMark, .enclosingMark: return true
        default: return properties.isDefaultIgnorableCodePoint
        }
    }

    /// Whether `needle` occurs in `haystack`, scalar by scalar.
    static func contains(_ haystack: [Unicode.Scalar], _ needle: [Unicode.Scalar]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }

    /// Whether any `leakRun` scalars of `text`, folded, are a run of the folded system prompt.
    func repeatsSystemPrompt(_ text: String) -> Bool {
        let prompt = Self.folded(systemPrompt)
        let answer = Self.folded(text)
        guard prompt.count >= Self.leakRun, answer.count >= Self.leakRun else { return false }
        var runs = Set<ArraySlice<Unicode.Scalar>>()
        runs.reserveCapacity(prompt.count - Self.leakRun + 1)
        for start in 0...(prompt.count - Self.leakRun) { runs.insert(prompt[start..<start + Self.leakRun]) }
        for start in 0...(answer.count - Self.leakRun) where runs.contains(answer[start..<start + Self.leakRun]) { return true }
        return false
    }

    /// Lowercased, every run of whitespace one space, markdown's emphasis and quote characters
    /// and invisible characters and marks gone: a prompt repeated in bold, with its lines joined
    /// or with zero-width spaces between its words is still the prompt.
    static func folded(_ text: String) -> [Unicode.Scalar] {
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.unicodeScalars.count)
        var blank = false
        for scalar in text.lowercased().unicodeScalars where !isIgnorable(scalar) {
            if scalar.properties.isWhitespace {
                blank = !scalars.isEmpty
                continue
            }
            if "*_`>~|\"'".unicodeScalars.contains(scalar) { continue }
            if blank {
                scalars.append(" ")
                blank = false
            }
            scalars.append(scalar)
        }
        return scalars
    }

    /// `text` with every masked link (`[label](url)`) shown as `label (url)`: an answer that
    /// reaches a user, or Discord under the assistant's name, never hides where a link goes. A
    /// user can ask the model for anything; a link that reads "Support portal" and leads
    /// elsewhere would carry the assistant's word.
    /// A label may hold brackets and an address parentheses, one level deep, as Discord reads
    /// them (`[Settings [beta]](https://x.example/a_(b))`); what is left `shown(_:)` breaks.
    static func unmaskingLinks(_ text: String) -> String {
        MaskedLinks.shown(in: text)
    }

    /// `text` without `<@…>`, `<@!…>`, `<@&…>`, `<#…>`, `<t:…>`, `<id:…>` and `</… …:…>`: a
    /// model's way to ping, point at channels, pages or name commands. Other `<` are kept. One pass, a tag taken out
    /// as its `>` comes: a tag inside another (`<<@1>@2>`) leaves none behind when it goes.
    static func withoutTags(_ text: String) -> String {
        var kept: [Unicode.Scalar] = []
        kept.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            kept.append(scalar)
            if scalar == ">", let open = tagStart(endingAt: kept) { kept.removeSubrange(open...) }
        }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: kept)
        return String(result)
    }

    /// Where the tag that `scalars`' last `>` ends begins, if it is one: a `<`, then `@`, `#`,
    /// `t:` or `id:` (a guild's pages) and no space, or `/` (a command, whose name may hold a
    /// subcommand's after a space); no other `<`, 120 scalars at most.
    private static func tagStart(endingAt scalars: [Unicode.Scalar]) -> Int? {
        let close = scalars.count - 1
        var index = close - 1
        var spaced = false
        func follows(_ text: String, at start: Int) -> Bool {
            let wanted = Array(text.unicodeScalars)
            return start + wanted.count < close && scalars[start..<start + wanted.count].elementsEqual(wanted)
        }
        while index >= 0, close - index <= 120 {
            let scalar = scalars[index]
            if scalar == "<" {
                let next = index + 1
                guard next < close else { return nil }
                if scalars[next] == "/" { return index }
                if spaced { return nil }
                switch scalars[next] {
                case "@", "#": return index
                default: return follows("t:", at: next) || follows("id:", at: next) ? index : nil
                }
            }
            if scalar == ">" || scalar == "\n" { return nil }
            if scalar.properties.isWhitespace { spaced = true }
            index -= 1
        }
        return nil
    }
}
