import DiscordREST

/// Who may use the desk: a member holding `DESK_PERMISSIONS` in the channel at hand (Administrator,
/// which the guild's owner holds too, counts as every permission) and, with `DESK_ROLE_ID`, that
/// role. One rule for the slash commands and for the FAQ forum's authors, checked by ThreadDesk
/// itself: Discord's `default_member_permissions` only decides whom the commands are offered to,
/// and a guild's admin can widen that under Integrations.
struct DeskAccess: Sendable, Hashable {
    /// What a member must hold; empty (`DESK_PERMISSIONS=0`): Administrator.
    let permissions: DiscordPermissions
    let roleID: String?

    init(_ settings: DeskSettings) {
        permissions = DiscordPermissions(string: settings.permissions) ?? .manageThreads
        roleID = settings.roleID
    }

    /// Whether a member holding `held` in the channel, with `roles`, may use the desk there.
    func allows(_ held: DiscordPermissions, roles: [String]) -> Bool {
        if let roleID, !roles.contains(roleID) { return false }
        if held.contains(.administrator) { return true }
        return !permissions.isEmpty && held.contains(permissions)
    }

    /// The rule in words, for a refused member and for the doctor.
    var requirement: String {
        let permission = permissions.isEmpty ? "Administrator" : Self.names(permissions)
        guard let roleID else { return permission }
        return "\(permission) and the <@&\(roleID)> role"
    }

    /// The names Discord's client shows, or the bitfield when ThreadDesk has no name for a bit.
    static func names(_ permissions: DiscordPermissions) -> String {
        let named = permissions.names
        let unnamed = permissions.subtracting(DiscordPermissions(DiscordPermissions.names.map(\.0)))
        return (named + (unnamed.isEmpty ? [] : ["permissions \(unnamed.rawValue)"])).joined(separator: ", ")
    }
}
