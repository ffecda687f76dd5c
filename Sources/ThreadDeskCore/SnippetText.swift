/// A canned reply's `{field}`s filled in: `{name}` becomes the field's value (`unknown` when the
/// app did not report it); braces around anything else, or left open, stay as written. One pass:
/// a value that itself holds `{…}` is not filled again.
public enum SnippetText {
    public static func fill(_ text: String, fields: [String: String?]) -> String {
        var result = ""
        var rest = text[...]
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                result += rest[open...]
                return result
            }
            let name = String(rest[rest.index(after: open)..<close])
            if let value = fields[name] {
                result += value ?? "unknown"
            } else {
                result += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}
