import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The note a crash report puts in the user's thread (never shown to the user): what happened,
/// on what, where in the code (the app's frames first), how many share it, and what a rule did.
/// Everything the app sent is escaped; frames sit in a code block. Fits one Discord post.
struct CrashNote: Sendable {
    let reading: CrashReading
    let group: CrashGroup
    let counts: CrashGroupCounts
    /// The payload's file name, attached to the note.
    let fileName: String
    /// What a rule does with this report: the user answered, or a regression noted.
    var ruling: Ruling? { reading.ruling }

    enum Ruling: Sendable, Hashable, Codable {
        /// Fixed in that version: the user is answered.
        case answered(fixedIn: String)
        /// Fixed in that version, and seen again in this one.
        case regression(fixedIn: String)
    }

    /// How many of the app's frames, and of the others after them, the note shows.
    static let appFrames = 6
    static let otherFrames = 3

    var text: String {
        let diagnostic = reading.diagnostic
        let icon = diagnostic.kind == .hang ? "🐢" : "💥"
        var lines = ["\(NoteMarkers.prefixes[0]) \(icon) **\(diagnostic.kind == .hang ? "Hang" : "Crash") C\(group.number)**: \(escaped(reading.cause))"]
        if let reason = diagnostic.terminationReason { lines.append("Termination: \(escaped(MessageText.clip(reason, limit: 200)))") }
        let app = [diagnostic.bundleID, diagnostic.appVersion.map { v in diagnostic.appBuild.map { "\(v) (\($0))" } ?? v }].compactMap { $0 }
        let device = [diagnostic.osVersion, diagnostic.deviceType, diagnostic.architecture].compactMap { $0 }
        lines.append(escaped(MessageText.clip((app + device).joined(separator: " · "), limit: 300)))
        lines.append("```\n\(frames())\n```")
        let users = counts.users == 1 ? "1 user" : "\(counts.users) users"
        let reports = counts.reports == 1 ? "1 report" : "\(counts.reports) reports"
        lines.append("Seen by \(users) in \(reports) (versions \(escaped(group.firstVersion))–\(escaped(group.lastVersion))). `/crash id:C\(group.number)` for more.")
        if !reading.awaiting.isEmpty {
            lines.append("Not symbolicated yet: no dSYM for \(reading.awaiting.prefix(3).joined(separator: ", ")) (upload it and this note is updated).")
        }
        if group.ignored { lines.append("Ignored (`/crash ignore`): it puts no crash tag on threads.") }
        switch ruling {
        case .answered(let fixed)?:
            lines.append("↪ Fixed in \(escaped(fixed)) (`/crash fixed`): the user was answered to update.")
        case .regression(let fixed)?:
            lines.append("⚠️ Regression: marked fixed in \(escaped(fixed)), seen again in \(escaped(reading.version)); the group is open again (`/crash` to change its rule).")
        case nil:
            if let fixed = group.fixedIn { lines.append("Marked fixed in \(escaped(fixed)).") }
        }
        lines.append("📎 \(escaped(fileName)): the whole payload.")
        return Self.fitted(lines)
    }

    /// The attributed thread's frames: the app's own first, then the top others, one per line.
    private func frames() -> String {
        let all = reading.diagnostic.threads.first?.frames ?? []
        let ours = reading.appFrames.prefix(Self.appFrames)
        let others = all.indices.filter { !reading.appFrames.contains($0) }.prefix(Self.otherFrames)
        let shown = Array(ours) + Array(others)
        guard !shown.isEmpty else { return "(no frames)" }
        return shown.map { index in
            let frame = all[index]
            let binary = MessageText.clip(frame.binaryName ?? "?", limit: 40).padding(toLength: 20, withPad: " ", startingAt: 0)
            let place: String
            if let symbol = reading.symbols[index] {
                let location = symbol.file.map { file in " (\((file as NSString).lastPathComponent)\(symbol.line.map { ":\($0)" } ?? ""))" } ?? ""
                place = MessageText.clip(symbol.function, limit: 160) + MessageText.clip(location, limit: 80)
            } else {
                place = "+0x" + String(frame.offset, radix: 16)
            }
            return Self.inCode("\(index)".padding(toLength: 3, withPad: " ", startingAt: 0) + " \(binary) \(place)")
        }.joined(separator: "\n")
    }

    private func escaped(_ text: String) -> String { DiscordMarkdown.escaped(text) }

    /// A line inside the code block: no backtick closes it.
    static func inCode(_ text: String) -> String {
        text.replacingOccurrences(of: "`", with: "ˋ").replacingOccurrences(of: "\n", with: " ")
    }

    /// The note within Discord's 2,000 characters: the frames' block shortened first.
    static func fitted(_ lines: [String]) -> String {
        var lines = lines
        var text = lines.joined(separator: "\n")
        while text.utf16.count > MessageText.discordLimit, let block = lines.firstIndex(where: { $0.hasPrefix("```") }) {
            var frameLines = lines[block].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard frameLines.count > 3 else { lines.remove(at: block); text = lines.joined(separator: "\n"); continue }
            frameLines.remove(at: frameLines.count - 2)
            lines[block] = frameLines.joined(separator: "\n")
            text = lines.joined(separator: "\n")
        }
        return MessageText.clip(text, limit: MessageText.discordLimit)
    }
}
