import ThreadDeskSettings

/// What happens to a user's data when it is erased (`DELETE /v1/me`, `threaddesk admin user
/// delete`, retention).
public struct PrivacySettings: Sendable, Hashable {
    /// What becomes of the user's Discord threads (`USER_DELETION`).
    public var deletion = UserDeletion.lock
    /// Users inactive this long are erased by the retention job (`RETENTION_DAYS`); nil: never.
    public var retention: Duration?
    /// How often the retention job looks for inactive users.
    public var retentionInterval: Duration = .seconds(3600)

    public init() {}

    static let maximumRetentionDays = 36_500

    /// Reads `USER_DELETION` and `RETENTION_DAYS`, adding what is wrong to `problem`.
    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let text = value("USER_DELETION") {
            if let mode = UserDeletion(rawValue: text.lowercased()) {
                deletion = mode
            } else {
                problem.invalid.append("USER_DELETION (lock: the thread is kept, archived and locked with a note; delete: the thread is deleted)")
            }
        }
        if let text = value("RETENTION_DAYS") {
            if text.lowercased() == "off" {
                retention = nil
            } else if let days = Int(text), (1...Self.maximumRetentionDays).contains(days) {
                retention = .seconds(days * 86_400)
            } else {
                problem.invalid.append("RETENTION_DAYS (whole days, 1 to \(Self.maximumRetentionDays), or off)")
            }
        }
    }
}

/// What becomes of an erased user's Discord threads.
public enum UserDeletion: String, Sendable, Hashable, CaseIterable {
    /// A note says the user asked for deletion, then the thread is archived and locked: the
    /// developer keeps Discord's copy for their records; ThreadDesk keeps nothing.
    case lock
    /// The thread is deleted in Discord, with every message and file in it.
    case delete
}
