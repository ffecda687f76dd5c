/// The markers that make a message an internal note, and how a user's own text that begins
/// with one is posted so that it stays theirs.
public enum NoteMarkers {
    /// `🥷` is what Discord's own client sends when an agent types `:ninja:`.
    public static let prefixes = [":ninja:", "🥷", "!HiddenMessage"]

    /// Whether `text`, after leading whitespace, begins with a note marker.
    public static func startsNote(_ text: String) -> Bool {
        let start = text.drop { $0.isWhitespace }
        return prefixes.contains { start.hasPrefix($0) }
    }

    /// The user's text as the bot posts it: text that begins (after whitespace) with a note
    /// marker — or with backslashes and then one — gets one more backslash in front of the
    /// marker, so Discord neither hides it from its author nor shows it as a note (`\:ninja:`
    /// renders as the literal shortcode). `userText(posted:)` undoes it exactly.
    public static func postable(userText text: String) -> String {
        guard let markerStart = escapableMarker(in: text) else { return text }
        var escaped = text
        escaped.insert("\\", at: markerStart)
        return escaped
    }

    /// What the user wrote, from what the bot posted for them.
    public static func userText(posted content: String) -> String {
        guard let markerStart = escapableMarker(in: content), markerStart > content.startIndex,
            content[content.index(before: markerStart)] == "\\"
        else { return content }
        var text = content
        text.remove(at: text.index(before: markerStart))
        return text
    }

    /// Where the marker begins in text that is whitespace, then backslashes, then a marker.
    private static func escapableMarker(in text: String) -> String.Index? {
        let afterSpace = text.drop { $0.isWhitespace }
        let marker = afterSpace.drop { $0 == "\\" }
        return prefixes.contains { marker.hasPrefix($0) } ? marker.startIndex : nil
    }
}
