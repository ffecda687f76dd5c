import Foundation

/// `.env` support: `KEY=value` lines, `#` comments, optional quotes. The process environment wins.
public enum DotEnv {
    public static func parse(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            var line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("export ") { line.removeFirst(7) }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
                if first == "\"" { value = value.replacingOccurrences(of: "\\n", with: "\n") }
            }
            values[key] = value
        }
        return values
    }

    /// The environment as the process sees it: `.env` at `path` if present, overridden by real variables.
    public static func environment(path: String = ".env", process: [String: String] = ProcessInfo.processInfo.environment)
        -> [String: String]
    {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return process }
        return parse(text).merging(process) { _, real in real }
    }
}
