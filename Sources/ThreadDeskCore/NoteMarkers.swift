/// The markers that make a message an internal note, and how a user's own text that begins
/// with one is posted so that it stays theirs.
public enum NoteMarkers {
    /// `🥷` is what Discord's own client sends when an agent types `:ninja:`.
    public static let prefixes = [":ninja:", "🥷", "!HiddenMessage"]

    /// What the bot puts in front of a user's text that would otherwise begin with a marker. An
    /// escape alone (`\:ninja:`) renders as the marker itself, so the agent would see a bot post
    /// that looks exactly like a ThreadDesk note; no note begins with this, and it is plainly
    /// the user's own words.
    public static let userTextPrefix = "(user wrote) "

    /// Characters that show nothing and that Discord's client does not strip: in front of a
    /// marker they hide nothing from the eye, so they count as whitespace does. Soft hyphen,
    /// Mongolian vowel separator, zero-width space/joiners and direction marks, word joiner and
    /// invisible operators, bidi embeddings and isolates, byte order mark, and every other
    /// default-ignorable one (the combining grapheme joiner, variation selectors, Hangul fillers, tags).
    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00AD, 0x180E, 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x2064, 0x2066...0x2069, 0xFEFF: true
        default: scalar.properties.isDefaultIgnorableCodePoint
        }
    }

    /// Whitespace, or a character that shows nothing: what a reader's eye skips before a marker.
    static func isBlank(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace || isInvisible(scalar) }

    /// Whether `text`, after leading whitespace and invisible characters, begins with a note
    /// marker. Compared by scalars, so `🥷🏽` (with a skin tone) is a marker too.
    public static func startsNote(_ text: String) -> Bool {
        startsWithMarker(text.unicodeScalars[...].drop(while: isBlank))
    }

    /// The user's text as the bot posts it: text that begins (after blanks) with a note marker,
    /// or with the prefix, backslashes or both and then a marker, gets `userTextPrefix` in front,
    /// so Discord neither hides it from its author nor shows it as a note. `userText(posted:)`
    /// undoes it exactly.
    public static func postable(userText text: String) -> String {
        isEscapable(text.unicodeScalars[...]) ? userTextPrefix + text : text
    }

    /// What the user wrote, from what the bot posted for them. Posts from before the prefix
    /// (`\:ninja:`: one backslash added in front of the marker) are undone too.
    public static func userText(posted content: String) -> String {
        let scalars = content.unicodeScalars[...]
        let prefix = userTextPrefix.unicodeScalars
        if scalars.starts(with: prefix) {
            let rest = scalars.dropFirst(prefix.count)
            return isEscapable(rest) ? String(rest) : content
        }
        let lead = scalars.drop(while: isBlank)
        let marker = lead.drop { $0 == "\\" }
        guard marker.startIndex > lead.startIndex, startsWithMarker(marker) else { return content }
        var text = content
        text.unicodeScalars.remove(at: text.unicodeScalars.index(before: marker.startIndex))
        return text
    }

    /// The user's text cut into Discord posts, each as the bot posts it; cut shorter where the
    /// prefix would push a post past Discord's limit.
    public static func posts(ofUserText text: String, limit: Int = MessageText.discordLimit) -> [String] {
        let posts = MessageText.split(text, limit: limit).map { postable(userText: $0) }
        guard posts.contains(where: { $0.utf16.count > limit }) else { return posts }
        return MessageText.split(text, limit: limit - userTextPrefix.utf16.count).map { postable(userText: $0) }
    }

    /// Blanks, then any run of prefixes, blanks and backslashes, then a marker.
    private static func isEscapable(_ text: Substring.UnicodeScalarView) -> Bool {
        let prefix = userTextPrefix.unicodeScalars
        var rest = text.drop(while: isBlank)
        while rest.starts(with: prefix) { rest = rest.dropFirst(prefix.count).drop(while: isBlank) }
        return startsWithMarker(rest.drop { $0 == "\\" })
    }

    private static func startsWithMarker(_ text: Substring.UnicodeScalarView) -> Bool {
        prefixes.contains { text.starts(with: $0.unicodeScalars) }
    }

    /// What an agent starts a reply with for it to reach the app without an alert: `:cold:`, and
    /// `🥶`, which Discord's client makes of it.
    public static let silentPrefixes = [":cold:", "🥶"]

    /// Whether a support reply is silent: it begins (after blanks) with a silent marker.
    public static func isSilent(_ text: String) -> Bool { silentMarker(in: text) != nil }

    /// A support reply as the app shows it: the silent marker, and the blanks after it, taken off.
    public static func shownReply(_ text: String) -> String {
        guard let end = silentMarker(in: text) else { return text }
        return String(text.unicodeScalars[end...].drop(while: isBlank))
    }

    /// `text` without the note and silent markers it begins with, however many, and the blanks
    /// before and between them: text from a machine (a model's answer) that must neither hide itself nor
    /// arrive without its alert. A skin tone after `🥷` goes with it.
    public static func strippingLeadingMarkers(_ text: String) -> String {
        var rest = text.unicodeScalars[...]
        while true {
            let lead = rest.drop(while: isBlank)
            guard let marker = (prefixes + silentPrefixes).first(where: { lead.starts(with: $0.unicodeScalars) }) else { return String(lead) }
            rest = lead.dropFirst(marker.unicodeScalars.count).drop { (0x1F3FB...0x1F3FF).contains($0.value) }
        }
    }

    /// Where the silent marker at the start of `text` ends, if there is one.
    private static func silentMarker(in text: String) -> String.UnicodeScalarView.Index? {
        let lead = text.unicodeScalars[...].drop(while: isBlank)
        for marker in silentPrefixes where lead.starts(with: marker.unicodeScalars) {
            return lead.index(lead.startIndex, offsetBy: marker.unicodeScalars.count)
        }
        return nil
    }
}
