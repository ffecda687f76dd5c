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
}
