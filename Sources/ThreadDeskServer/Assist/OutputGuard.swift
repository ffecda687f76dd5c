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
    static func unmaskingLinks(_ text: String) -> String {
        text.replacing(/\[([^\[\]\n]{0,500})\]\(\s*<?([^\s()<>]{1,2000})>?(?:\s+"[^"\n]{0,200}")?\s*\)/) { match in
            let (label, url) = (match.output.1, match.output.2)
            return label.isEmpty || label == url ? "\(url)" : "\(label) (\(url))"
        }
    }

    /// `text` without `<@…>`, `<@!…>`, `<@&…>`, `<#…>`, `<t:…>` and `</…:…>`: a model's way to
    /// ping, point at channels or name commands. Other `<` are kept.
    static func withoutTags(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var kept = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == "<", let end = tagEnd(scalars, from: index) {
                index = end + 1
                continue
            }
            kept.append(scalars[index])
            index += 1
        }
        return String(kept)
    }

    /// Where the tag starting at `start` ends (its `>`), if it is one.
    private static func tagEnd(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        let next = start + 1
        guard next < scalars.count else { return nil }
        let opens: Bool
        switch scalars[next] {
        case "@", "#", "/": opens = true
        case "t": opens = next + 1 < scalars.count && scalars[next + 1] == ":"
        default: opens = false
        }
        guard opens else { return nil }
        var index = next + 1
        while index < scalars.count, index - start <= 120 {
            let scalar = scalars[index]
            if scalar == ">" { return index }
            if scalar.properties.isWhitespace || scalar == "<" { return nil }
            index += 1
        }
        return nil
    }
}
