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
    let systemPrompt: String
    /// The longest text kept, in UTF-16 units (Discord counts so).
    let maxCharacters: Int
    /// Whether `check` returns the text as it may be shown (`shown(_:)`, clipped), or as it came,
    /// only checked for the prompt: a reply of several texts in JSON (translations) is read
    /// first, and each text is shown on its own.
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

    /// The text as it may be shown, or why not.
    func check(_ text: String) -> Result<String, Refusal> {
        if leaks(text) { return .failure(.leak) }
        guard shapesText else { return text.isEmpty ? .failure(.empty) : .success(text) }
        let shown = Self.shown(text)
        // Taking a tag out can join the canary's pieces (`zq-<@1>canary`): the final text is checked too.
        if leaks(shown) { return .failure(.leak) }
        guard !shown.isEmpty else { return .failure(.empty) }
        return .success(MessageText.clip(shown, limit: maxCharacters))
    }

    /// Whether `text` gives the prompt away: the canary, or a long run of the system prompt.
    func leaks(_ text: String) -> Bool {
        if !canary.isEmpty, text.lowercased().contains(canary.lowercased()) { return true }
        return repeatsSystemPrompt(text)
    }

    /// `text` as the assistant may say it: masked links shown with their address, tags and leading
    /// markers taken out, edges trimmed, and again until nothing changes (each round that changes
    /// anything shortens the text, so it ends), then any masked link the rules could not read
    /// broken (`](` becomes `] (`), which takes nothing out and makes nothing new.
    static func shown(_ text: String) -> String {
        var text = text
        while true {
            var next = unmaskingLinks(text)
            next = withoutTags(next)
            next = NoteMarkers.strippingLeadingMarkers(next).trimmingCharacters(in: .whitespacesAndNewlines)
            if next == text { return breakingMaskedLinks(next) }
            text = next
        }
    }

    /// `text` with no `](` left: Discord reads a masked link only where the label's `]` meets the
    /// address's `(`; a space between shows both as written.
    static func breakingMaskedLinks(_ text: String) -> String {
        text.contains("](") ? text.replacingOccurrences(of: "](", with: "] (") : text
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
    /// gone: a prompt repeated in bold or with its lines joined is still the prompt.
    static func folded(_ text: String) -> [Unicode.Scalar] {
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.unicodeScalars.count)
        var blank = false
        for scalar in text.lowercased().unicodeScalars {
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

    /// `text` without `<@…>`, `<@!…>`, `<@&…>`, `<#…>`, `<t:…>` and `</…:…>`: a model's way to
    /// ping, point at channels or name commands. Other `<` are kept. One pass, a tag taken out
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

    /// Where the tag that `scalars`' last `>` ends begins, if it is one: a `<`, then `@`, `#`, `/`
    /// or `t:`, then no space and no other `<`, 120 scalars at most.
    private static func tagStart(endingAt scalars: [Unicode.Scalar]) -> Int? {
        let close = scalars.count - 1
        var index = close - 1
        while index >= 0, close - index <= 120 {
            let scalar = scalars[index]
            if scalar == "<" {
                let next = index + 1
                guard next < close else { return nil }
                switch scalars[next] {
                case "@", "#", "/": return index
                case "t": return next + 1 < close && scalars[next + 1] == ":" ? index : nil
                default: return nil
                }
            }
            if scalar.properties.isWhitespace || scalar == ">" { return nil }
            index -= 1
        }
        return nil
    }
}
