import Foundation
import ThreadDeskCore

/// What a model said, made safe to show or send, or refused. Model text is untrusted: it was
/// written under the influence of users' and FAQ authors' words. It is refused when it gives
/// away the prompt (the request's canary, or a long run of the system prompt); otherwise it
/// loses what would make Discord act on it (a leading note or silent marker, mention, channel,
/// role, command and timestamp tags) and is clipped.
struct OutputGuard: Sendable {
    /// A random word in the system prompt and nowhere else: an answer holding it repeats the prompt.
    let canary: String
    let systemPrompt: String
    /// The longest text kept, in UTF-16 units (Discord counts so).
    let maxCharacters: Int

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
        if !canary.isEmpty, text.lowercased().contains(canary.lowercased()) { return .failure(.leak) }
        if repeatsSystemPrompt(text) { return .failure(.leak) }
        var cleaned = Self.withoutTags(text)
        cleaned = NoteMarkers.strippingLeadingMarkers(cleaned)
        cleaned = cleaned.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !cleaned.isEmpty else { return .failure(.empty) }
        return .success(MessageText.clip(cleaned, limit: maxCharacters))
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
    /// A link inside another's label (`[[a](u)](v)`) is one once the inner is shown, so this goes
    /// on until nothing changes; each round shortens the text, so it ends.
    static func unmaskingLinks(_ text: String) -> String {
        var text = text
        while true {
            let shown = text.replacing(/\[([^\[\]\n]{0,500})\]\(\s*<?([^\s()<>]{1,2000})>?(?:\s+"[^"\n]{0,200}")?\s*\)/) { match in
                let (label, url) = (match.output.1, match.output.2)
                return label.isEmpty || label == url ? "\(url)" : "\(label) (\(url))"
            }
            if shown == text { return text }
            text = shown
        }
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
