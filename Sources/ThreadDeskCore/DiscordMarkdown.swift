/// Client data shown inside a note an agent trusts. The client chose every character, so none may
/// act as Discord markdown: no masked link, autolink, mention, channel, emoji or timestamp tag,
/// heading, quote, code span or spoiler. Each character that could start one gets a backslash,
/// which Discord shows as the character alone, so the agent reads exactly what was sent.
public enum DiscordMarkdown {
    /// `:` breaks autolinks (`https://…`) and emoji shortcodes; `<` every `<@…>`, `<#…>`, `<t:…>`
    /// and `<https://…>`; `@` `@everyone` and `@here`; `#` and `>` headings, subtext and quotes;
    /// `[` and `]` masked links. `_` stays: it only makes emphasis, and ids are full of it.
    static let special: Set<Unicode.Scalar> = ["\\", "*", "~", "`", "|", "[", "]", "<", ">", "#", "@", ":"]

    /// `text` with every markdown character escaped.
    public static func escaped(_ text: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if special.contains(scalar) { escaped.append("\\") }
            escaped.append(scalar)
        }
        return String(escaped)
    }

    /// Each line behind `> `, so a text reads as a quote inside a note. Every line break
    /// Discord honours starts a quoted line (CR LF, a lone CR, NEL, U+2028, U+2029 as well as LF):
    /// no text can end the quote and pass for the note's own lines.
    public static func quoted(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map { "> \($0)" }.joined(separator: "\n")
    }
}
