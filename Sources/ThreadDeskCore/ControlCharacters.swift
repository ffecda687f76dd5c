/// Control characters in the text a client sends. A NUL cuts a text in SQLite's C strings and is
/// refused by PostgreSQL's `text`; the others draw nothing a person reads. A text holding one is
/// refused whole, so what is kept is always what was accepted; line breaks and tabs are text.
public enum ControlCharacters {
    /// Whether `scalar` is a control character a text may not hold: C0 but tab, line feed and
    /// carriage return; DEL; C1.
    public static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: false
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }

    /// The first control character `text` may not hold, if any.
    public static func first(in text: some StringProtocol) -> Unicode.Scalar? {
        text.unicodeScalars.first(where: isRefused)
    }

    /// `U+0000`: how an error names the character (it cannot be shown as itself).
    public static func name(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `text` with each control character shown as a symbol (`␀` for NUL, `␛` for ESC, `�` for
    /// C1): for what ThreadDesk writes about a client's document, which is shown, never refused.
    public static func shown(_ text: String) -> String {
        guard first(in: text) != nil else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard isRefused(scalar) else {
                scalars.append(scalar)
                continue
            }
            switch scalar.value {
            case 0x00...0x1F: scalars.append(Unicode.Scalar(0x2400 + scalar.value)!)
            case 0x7F: scalars.append("\u{2421}")
            default: scalars.append("\u{FFFD}")
            }
        }
        return String(scalars)
    }

    /// How an error names a field or key the client chose: at most `limit` Unicode scalars (then
    /// `…`), controls shown as symbols, so an answer never echoes a whole hostile key.
    public static func named(_ field: String, limit: Int = 40) -> String {
        let shown = self.shown(String(field.unicodeScalars.prefix(limit)))
        return field.unicodeScalars.count > limit ? shown + "…" : shown
    }
}
