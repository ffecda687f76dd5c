import Foundation

/// The server's folders and what each one's code uses of the others, read from the sources: a
/// folder depends on another when it names a type (or a free function or constant) declared
/// there. Comments and string literals name nothing; `private` declarations are no one's to use.
struct ServerMap {
    /// Every folder of the server, code or not.
    let folders: Set<String>
    /// Folder → the folders whose declarations it names.
    let dependencies: [String: Set<String>]
    /// Folder → another folder → the names it uses there (for a failure's message).
    let uses: [String: [String: Set<String>]]
    /// The folders that declare something others can use (not `Resources`).
    let declaring: Set<String>

    /// Reads `root` (`Sources/ThreadDeskServer`): its first-level directories are the folders.
    init(root: URL) throws {
        let manager = FileManager.default
        let folders = try manager.contentsOfDirectory(atPath: root.path).filter { name in
            var isDirectory: ObjCBool = false
            return manager.fileExists(atPath: root.appendingPathComponent(name).path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        var sources: [String: [String]] = [:]
        for folder in folders {
            let directory = root.appendingPathComponent(folder)
            let files = (manager.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".swift") }
            sources[folder] = try files.sorted().map { try Self.stripped(String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8)) }
        }
        self.init(folders: Set(folders), sources: sources)
    }

    /// The map of folders whose files (already stripped or not) are `sources`.
    init(folders: Set<String>, sources: [String: [String]]) {
        var declared: [String: Set<String>] = [:]
        for (folder, files) in sources {
            for file in files {
                for name in Self.declarations(in: Self.stripped(file)) { declared[name, default: []].insert(folder) }
            }
        }
        // A name two folders declare (each its own, internal) says nothing of which one is meant.
        let owner = declared.compactMapValues { $0.count == 1 ? $0.first : nil }
        var uses: [String: [String: Set<String>]] = [:]
        for (folder, files) in sources {
            for file in files {
                for name in Self.identifiers(in: Self.stripped(file)) {
                    guard let other = owner[name], other != folder else { continue }
                    uses[folder, default: [:]][other, default: []].insert(name)
                }
            }
        }
        self.folders = folders
        self.uses = uses
        declaring = Set(declared.values.flatMap { $0 })
        dependencies = Dictionary(uniqueKeysWithValues: folders.map { ($0, Set(uses[$0]?.keys.map { $0 } ?? [])) })
    }

    /// The groups of folders that depend on each other, directly or round a loop (Tarjan's
    /// strongly connected components of more than one folder), each sorted.
    var cycles: [[String]] {
        var index: [String: Int] = [:]
        var low: [String: Int] = [:]
        var stack: [String] = []
        var onStack: Set<String> = []
        var found: [[String]] = []
        func visit(_ folder: String) {
            index[folder] = index.count
            low[folder] = index[folder]
            stack.append(folder)
            onStack.insert(folder)
            for next in (dependencies[folder] ?? []).sorted() {
                if index[next] == nil {
                    visit(next)
                    low[folder] = min(low[folder]!, low[next]!)
                } else if onStack.contains(next) {
                    low[folder] = min(low[folder]!, index[next]!)
                }
            }
            guard low[folder] == index[folder] else { return }
            var component: [String] = []
            while let top = stack.popLast() {
                onStack.remove(top)
                component.append(top)
                if top == folder { break }
            }
            if component.count > 1 { found.append(component.sorted()) }
        }
        for folder in folders.sorted() where index[folder] == nil { visit(folder) }
        return found.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// `source` without its comments and the content of its string literals.
    static func stripped(_ source: String) -> String {
        let text = Array(source.unicodeScalars)
        var kept = String.UnicodeScalarView()
        var at = 0
        func starts(_ prefix: String) -> Bool {
            var position = at
            for scalar in prefix.unicodeScalars {
                guard position < text.count, text[position] == scalar else { return false }
                position += 1
            }
            return true
        }
        while at < text.count {
            if starts("//") {
                while at < text.count, text[at] != "\n" { at += 1 }
            } else if starts("/*") {
                var depth = 0
                repeat {
                    if starts("/*") { depth += 1; at += 2 } else if starts("*/") { depth -= 1; at += 2 } else { at += 1 }
                } while depth > 0 && at < text.count
            } else if starts("\"\"\"") || starts("#\"\"\"") {
                let close = starts("#") ? "\"\"\"#" : "\"\"\""
                at += close.unicodeScalars.count
                while at < text.count, !starts(close) { at += 1 }
                at += close.unicodeScalars.count
                kept.append(contentsOf: "\"\"".unicodeScalars)
            } else if starts("\"") || starts("#\"") {
                let raw = starts("#")
                at += raw ? 2 : 1
                while at < text.count, !(raw ? starts("\"#") : starts("\"")), text[at] != "\n" {
                    at += !raw && text[at] == "\\" ? 2 : 1
                }
                at += raw ? 2 : 1
                kept.append(contentsOf: "\"\"".unicodeScalars)
            } else {
                kept.append(text[at])
                at += 1
            }
        }
        return String(kept)
    }

    /// The names a stripped file declares at its top level for others to use.
    static func declarations(in stripped: String) -> [String] {
        var names: [String] = []
        var depth = 0
        let kinds: Set<Substring> = ["struct", "class", "enum", "actor", "protocol", "typealias", "func", "let", "var"]
        for line in stripped.split(separator: "\n", omittingEmptySubsequences: false) {
            if depth == 0 {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "(" || $0 == ":" || $0 == "<" || $0 == "{" || $0 == "=" })
                if let kind = words.firstIndex(where: { kinds.contains($0) }), kind + 1 < words.count,
                    !words[..<kind].contains(where: { $0.hasPrefix("private") || $0.hasPrefix("fileprivate") || $0 == "extension" })
                {
                    names.append(String(words[kind + 1]))
                }
            }
            depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
        }
        return names
    }

    /// Every identifier a stripped file names.
    static func identifiers(in stripped: String) -> Set<String> {
        var found: Set<String> = []
        var current = ""
        for character in stripped.unicodeScalars {
            if character == "_" || CharacterSet.alphanumerics.contains(character) {
                current.unicodeScalars.append(character)
            } else {
                if let first = current.unicodeScalars.first, !CharacterSet.decimalDigits.contains(first) { found.insert(current) }
                current = ""
            }
        }
        if !current.isEmpty { found.insert(current) }
        return found
    }
}

/// The README's map of the server: one row per folder, top to bottom, with the folders it says
/// each depends on.
struct ReadmeMap {
    struct Row: Equatable {
        let folder: String
        /// The folders named in the "depends on" column (in backticks).
        let dependsOn: Set<String>
        /// The column says "everything below": the composition root.
        let everythingBelow: Bool
    }

    let rows: [Row]

    /// Reads the table under `### The server's map` in `readme`.
    init(readme: String) {
        var rows: [Row] = []
        var inSection = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") {
                inSection = line.hasPrefix("### The server's map")
                continue
            }
            guard inSection, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let folder = Self.quoted(in: cells[1]).first ?? cells[1]
            let column = cells[cells.count - 2]
            rows.append(Row(folder: folder, dependsOn: Set(Self.quoted(in: column)), everythingBelow: column.contains("everything below")))
        }
        self.rows = rows
    }

    /// The words in backticks in `text`.
    static func quoted(in text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }
}
