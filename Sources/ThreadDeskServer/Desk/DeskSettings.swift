import Foundation
import ThreadDeskCore
/// The agent's desk in Discord: ThreadDesk's slash commands and the name support speaks under.
public struct DeskSettings: Sendable, Hashable {
    /// Whether ThreadDesk registers its slash commands in the guild and answers them
    /// (`DESK_COMMANDS`, on unless `off`).
    public var commands = true
    /// Only members with this role (and `permissions`) may run the commands and write curated
    /// answers (`DESK_ROLE_ID`); without it, `permissions` alone decide.
    public var roleID: String?
    /// What a member must hold in the channel to use the desk (`DESK_PERMISSIONS`, a permission
    /// bitfield; `0`: Administrator), checked by ThreadDesk (`DeskAccess`), and the commands'
    /// `default_member_permissions`, whom Discord offers them to. Manage Threads by default.
    public var permissions = DeskSettings.manageThreads
    public static let manageThreads = String(1 << 34)
    /// The name support speaks under when ThreadDesk posts for it and no agent's name is known
    /// (`SUPPORT_NAME`), and the name of the forum's webhook.
    public var teamName = "Support"
    /// When support is in (`SUPPORT_HOURS`); nil: always.
    public var hours: SupportHours?
    /// What a user who writes while support is away gets, as support (`AWAY_MESSAGE`); nil: nothing.
    public var awayMessage: String?
    /// At most one away message per user this often (`AWAY_MESSAGE_INTERVAL`, 12 h by default).
    public var awayInterval: Duration = .seconds(12 * 3600)

    public init() {}

    /// `12h`, `30m`, `90s`, or seconds.
    static func interval(_ text: String) -> Duration? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        let unit = text.last.flatMap { units[$0] }
        guard let value = Double(unit == nil ? text : String(text.dropLast())), value.isFinite, value > 0 else { return nil }
        let seconds = value * (unit ?? 1)
        return seconds <= 366 * 86400 ? .seconds(seconds) : nil
    }

    /// A name Discord takes for a webhook's message: 1–80 characters, without the words it
    /// reserves (`discord`, `clyde`), and not the app's assistant's (`reserved`); otherwise the
    /// team's name.
    func speakerName(_ name: String?, reserved: AssistantName? = nil) -> String {
        let trimmed = (name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        for candidate in [trimmed, teamName, "Support", "Support team"] {
            let lowered = candidate.lowercased()
            if (1...80).contains(candidate.count), !lowered.contains("discord"), !lowered.contains("clyde"),
                reserved?.matches(candidate) != true
            {
                return candidate
            }
        }
        return "Support team"
    }
}
