import Foundation
/// The agent's desk in Discord: ThreadDesk's slash commands and the name support speaks under.
public struct DeskSettings: Sendable, Hashable {
    /// Whether ThreadDesk registers its slash commands in the guild and answers them
    /// (`DESK_COMMANDS`, on unless `off`).
    public var commands = true
    /// Only members with this role may run the commands (`DESK_ROLE_ID`); without it, whoever
    /// Discord offers them to (see `permissions`).
    public var roleID: String?
    /// The commands' `default_member_permissions` (`DESK_PERMISSIONS`, a permission bitfield):
    /// Discord offers them only to members who have it. Manage Threads by default.
    public var permissions = DeskSettings.manageThreads
    public static let manageThreads = String(1 << 34)
    /// The name support speaks under when ThreadDesk posts for it and no agent's name is known
    /// (`SUPPORT_NAME`), and the name of the forum's webhook.
    public var teamName = "Support"

    public init() {}

    /// A name Discord takes for a webhook's message: 1–80 characters, without the words it
    /// reserves (`discord`, `clyde`); otherwise the team's name.
    func speakerName(_ name: String?) -> String {
        let trimmed = (name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        for candidate in [trimmed, teamName] {
            let lowered = candidate.lowercased()
            if (1...80).contains(candidate.count), !lowered.contains("discord"), !lowered.contains("clyde") { return candidate }
        }
        return "Support"
    }
}
