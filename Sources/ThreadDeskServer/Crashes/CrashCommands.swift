import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// `/crashes` and `/crash`: the app's crash groups for the agents, and the rules they set on
/// one (`fixed`: users of older versions are answered; `ignore`: no crash tag). Per app: the app
/// of the thread the command is used in. Answered from the store, only to the agent.
struct CrashCommands: DeskCommandBook {
    let store: any CrashRecords
    let now: @Sendable () -> Date

    static let list = "crashes"
    static let one = "crash"

    var definitions: [DiscordApplicationCommand] { Self.commands }

    static var commands: [DiscordApplicationCommand] {
        [
            DiscordApplicationCommand(
                name: Self.list, description: "This app's crashes and hangs, by users affected in the last days",
                options: [DiscordCommandOption(.integer, name: "days", description: "How many days back (1 to 90; 7)")]),
            DiscordApplicationCommand(
                name: Self.one, description: "One crash group: what it is, where it appears; or set its rule",
                options: [
                    DiscordCommandOption(.string, name: "id", description: "The group, e.g. C12", required: true, maxLength: 24),
                    DiscordCommandOption(.string, name: "fixed", description: "The version that fixes it: older versions are answered to update", maxLength: 32),
                    DiscordCommandOption(.boolean, name: "ignore", description: "True: its reports put no crash tag on threads; false: they do again"),
                ]),
        ]
    }

    func answer(_ data: DiscordInteraction.CommandData, in thread: Snowflake, owner: UserID, app: AppSettings) async throws -> String {
        let options = data.options ?? []
        if data.name == Self.list {
            let days = Desk.text("days", in: options).flatMap(Int.init).map { min(max($0, 1), 90) } ?? 7
            return Self.fitted(try await groups(of: app.id, days: days))
        }
        let typed = (Desk.text("id", in: options) ?? "").trimmingCharacters(in: .whitespaces)
        guard let number = Self.number(typed), var group = try await store.crashGroup(app: app.id, number: number) else {
            return "No crash group \(DiscordMarkdown.escaped(String(typed.prefix(24)))) in this app: `/crashes` lists them."
        }
        var changes: [String] = []
        if let fixed = Desk.text("fixed", in: options)?.trimmingCharacters(in: .whitespaces), !fixed.isEmpty {
            guard Self.isVersion(fixed) else { return "“\(DiscordMarkdown.escaped(String(fixed.prefix(32))))” is no version: write it as the app shows it, e.g. 4.3 or 4.3.1." }
            (group.fixedIn, group.regressedIn) = (fixed, nil)
            changes.append("Marked fixed in \(fixed): a report from an older version is answered (once per user) to update.")
        }
        if let ignore = Desk.text("ignore", in: options).flatMap(Bool.init) {
            group.ignored = ignore
            changes.append(ignore ? "Ignored: its reports put no crash tag on threads." : "No longer ignored.")
        }
        if !changes.isEmpty { try await store.saveCrashRules(group) }
        return Self.fitted(changes + (try await describe(group)))
    }

    /// The groups with reports in the last `days`, the most users first.
    private func groups(of app: AppID, days: Int) async throws -> [String] {
        let since = now().addingTimeInterval(-Double(days) * 86_400)
        let groups = try await store.crashGroups(app: app, since: since, limit: 15)
        guard !groups.isEmpty else { return ["No crash or hang reported in the last \(days) days."] }
        let lines = groups.map { group, counts in
            "**C\(group.number)** \(escaped(group.title)) · \(counts.recentUsers) users, \(counts.recentReports) reports · "
                + "\(escaped(group.firstVersion))–\(escaped(group.lastVersion))\(Self.status(group))"
        }
        return ["Crashes and hangs of the last \(days) days, by users affected:"] + lines
    }

    private func describe(_ group: CrashGroup) async throws -> [String] {
        let counts = try await store.crashCounts(app: group.app, group: group.number, since: now().addingTimeInterval(-CrashService.recent))
        let seen = try await store.crashAppearances(app: group.app, group: group.number, limit: 10)
        var lines = [
            "**C\(group.number)** (\(group.kind)) \(escaped(group.title))\(Self.status(group))",
            "\(counts.users) users, \(counts.reports) reports (last 7 days: \(counts.recentUsers) users, \(counts.recentReports) reports)",
            "Versions \(escaped(group.firstVersion))–\(escaped(group.lastVersion)) · first <t:\(Int(group.firstSeen.timeIntervalSince1970)):R>, last <t:\(Int(group.lastSeen.timeIntervalSince1970)):R>",
            "Signature: `\(CrashNote.inCode(MessageText.clip(group.signature, limit: 300)))`",
        ]
        if !seen.isEmpty {
            lines.append("In: " + seen.map { appearance in
                appearance.threadID.map { "<#\($0)>" } ?? "a thread not made yet"
            }.joined(separator: " "))
        }
        return lines
    }

    /// What the app wrote, escaped and cut to a length a line of an answer can hold.
    private func escaped(_ text: String) -> String { DiscordMarkdown.escaped(MessageText.clip(text, limit: 120)) }

    private static func status(_ group: CrashGroup) -> String {
        var parts: [String] = []
        if let fixed = group.fixedIn { parts.append("fixed in \(DiscordMarkdown.escaped(MessageText.clip(fixed, limit: 32)))") }
        if let regressed = group.regressedIn { parts.append("⚠️ regression in \(DiscordMarkdown.escaped(MessageText.clip(regressed, limit: 32)))") }
        if group.ignored { parts.append("ignored") }
        return parts.isEmpty ? "" : " · " + parts.joined(separator: ", ")
    }

    /// The answer within Discord's 2,000 characters: whole lines, the last ones left out (and counted).
    static func fitted(_ lines: [String]) -> String {
        var kept: [String] = []
        var units = 0
        for (index, line) in lines.enumerated() {
            let left = lines.count - index
            let line = MessageText.clip(line, limit: 1500)
            if units + line.utf16.count + 1 > MessageText.discordLimit - 40 {
                kept.append("…and \(left) more")
                break
            }
            kept.append(line)
            units += line.utf16.count + 1
        }
        return kept.joined(separator: "\n")
    }

    /// "C12", "c12" or "12".
    static func number(_ typed: String) -> Int64? {
        let digits = typed.first.map { $0 == "C" || $0 == "c" } == true ? String(typed.dropFirst()) : typed
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy(\.isASCII), let number = Int64(digits), number > 0 else { return nil }
        return number
    }

    /// Digits and dots (and a suffix of letters, digits, `-`), as app versions are written.
    static func isVersion(_ text: String) -> Bool {
        guard (1...32).contains(text.count), text.first?.isNumber == true, text.first?.isASCII == true else { return false }
        return text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-") }
    }
}
