import DiscordREST
import Foundation

/// The readable part of a diagnostics upload: the fields support looks at first, then the shape
/// of the document as a nested list, all in one `:ninja:` note that never exceeds Discord's limit.
public struct DiagnosticsSummary: Sendable {
    public let filename: String
    public let byteCount: Int
    public let document: JSON

    /// Keys, in the order support reads them, and the names apps commonly give them.
    static let highlights: [(label: String, keys: [String])] = [
        ("App version", ["appversion", "app_version", "shortversion", "version"]),
        ("Build", ["buildversion", "build_version", "build", "buildnumber"]),
        ("Platform", ["osplatform", "os_platform", "platform", "os", "systemname"]),
        ("OS version", ["osversion", "os_version", "systemversion", "system_version"]),
        ("Device", ["devicemodel", "device_model", "model", "device"]),
        ("Locale", ["locale", "language", "languagecode"]),
    ]
    /// Arrays longer than this are shown as a count, not expanded.
    static let inlineArrayLimit = 5
    static let maxDepth = 3
    static let maxValueLength = 80

    public init(filename: String, byteCount: Int, document: JSON) {
        self.filename = filename
        self.byteCount = byteCount
        self.document = document
    }

    /// `diagnostics-20261122T193145Z.json`.
    public static func filename(at date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "diagnostics-%04d%02d%02dT%02d%02d%02dZ.json", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    public var note: String {
        var lines = [":ninja: **Diagnostics** `\(filename)` (\(Self.formatBytes(byteCount)))"]
        for (label, keys) in Self.highlights {
            if let value = Self.find(keys, in: document, depth: 0) { lines.append("- **\(label)**: \(value)") }
        }
        var outline: [String] = []
        Self.outline(document, indent: "", depth: 0, into: &outline)
        if !outline.isEmpty { lines.append("- **Contents**") }
        var text = lines.joined(separator: "\n")
        let budget = MessageText.discordLimit - 40
        for (index, line) in outline.enumerated() {
            let candidate = "\n  " + line
            if text.utf16.count + candidate.utf16.count > budget {
                text += "\n  - … \(outline.count - index) more lines in the file"
                break
            }
            text += candidate
        }
        return MessageText.clip(text)
    }

    /// The first scalar under any of `keys` (case-insensitive), breadth first so top-level wins.
    static func find(_ keys: [String], in json: JSON, depth: Int) -> String? {
        guard depth <= maxDepth, let object = json.objectValue else { return nil }
        for key in keys {
            if let match = object.first(where: { $0.key.lowercased() == key }), let text = scalarText(match.value) {
                return text
            }
        }
        for key in object.keys.sorted() {
            if let found = find(keys, in: object[key]!, depth: depth + 1) { return found }
        }
        return nil
    }

    static func outline(_ json: JSON, indent: String, depth: Int, into lines: inout [String]) {
        guard let object = json.objectValue else { return }
        for key in object.keys.sorted() {
            let name = clean(key)
            let value = object[key]!
            switch value {
            case .object(let members):
                if depth + 1 >= maxDepth || members.isEmpty {
                    lines.append("\(indent)- \(name): {\(members.count) fields}")
                } else {
                    lines.append("\(indent)- \(name):")
                    outline(value, indent: indent + "  ", depth: depth + 1, into: &lines)
                }
            case .array(let elements):
                let scalars = elements.compactMap(scalarText)
                if elements.count <= inlineArrayLimit && scalars.count == elements.count {
                    lines.append("\(indent)- \(name): [\(scalars.joined(separator: ", "))]")
                } else {
                    lines.append("\(indent)- \(name): \(elements.count) items")
                }
            default:
                lines.append("\(indent)- \(name): \(scalarText(value) ?? "")")
            }
        }
    }

    static func scalarText(_ json: JSON) -> String? {
        switch json {
        case .string(let text): return clean(text)
        case .number(let number):
            return number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
        case .integer(let number): return String(number)
        case .bool(let bool): return String(bool)
        case .null: return "null"
        default: return nil
        }
    }

    /// One line, short, and unable to break out of the list, ping anyone or make a link or a
    /// heading: the document is the client's. Cut before escaping, so no escape is cut in half.
    static func clean(_ text: String) -> String {
        let line = ControlCharacters.shown(text.map { $0.isNewline ? " " : String($0) }.joined())
        return DiscordMarkdown.escaped(line.count > maxValueLength ? String(line.prefix(maxValueLength - 1)) + "…" : line)
    }

    static func formatBytes(_ count: Int) -> String {
        switch count {
        case ..<1024: return "\(count) B"
        case ..<(1024 * 1024): return String(format: "%.1f KiB", Double(count) / 1024)
        default: return String(format: "%.1f MiB", Double(count) / 1_048_576)
        }
    }
}
