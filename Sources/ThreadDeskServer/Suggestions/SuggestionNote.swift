import ThreadDeskCore

/// The note support reads after a message the user wrote right after a suggestion was shown.
enum SuggestionNote {
    /// Titles are clipped to this many characters in the note.
    static let maxTitle = 100

    static func text(for answer: CuratedAnswer) -> String {
        let line = answer.title.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let title = line.count > maxTitle ? String(line.prefix(maxTitle - 1)) + "…" : line
        // `<#id>` is Discord's link to the FAQ post.
        return ":ninja: The user was shown the suggested answer “\(title)” (<#\(answer.id)>) right before writing this."
    }
}
