import ThreadDeskCore

/// The desk's variables: who may use the slash commands, and how support is away.
extension ServerConfiguration {
    /// `DESK_*`, `SUPPORT_*`, `AWAY_*`.
    mutating func readDesk(_ value: (String) -> String?, problem: inout Problem) {
        if let commands = value("DESK_COMMANDS") {
            switch commands.lowercased() {
            case "on": desk.commands = true
            case "off": desk.commands = false
            default: problem.invalid.append("DESK_COMMANDS (on or off)")
            }
        }
        if let role = value("DESK_ROLE_ID") {
            if UInt64(role) != nil, role.allSatisfy(\.isASCII) { desk.roleID = role } else { problem.invalid.append("DESK_ROLE_ID (a role's id, digits only)") }
        }
        if let permissions = value("DESK_PERMISSIONS") {
            if UInt64(permissions) != nil, permissions.allSatisfy(\.isASCII) {
                desk.permissions = permissions
            } else {
                problem.invalid.append("DESK_PERMISSIONS (a permission bitfield, digits only; 0: only administrators)")
            }
        }
        if let name = value("SUPPORT_NAME") {
            if desk.speakerName(name) == name { desk.teamName = name } else { problem.invalid.append("SUPPORT_NAME (1–80 characters, without \"discord\" or \"clyde\")") }
        }
        if let hours = value("SUPPORT_HOURS") {
            do {
                desk.hours = try SupportHours(hours)
            } catch {
                problem.invalid.append("SUPPORT_HOURS (a time zone and weekly hours: Europe/Berlin Mon-Fri 09:00-17:00; Sat 10:00-14:00)")
            }
        }
        if let message = value("AWAY_MESSAGE") {
            if message.utf16.count <= 1900 { desk.awayMessage = message } else { problem.invalid.append("AWAY_MESSAGE (at most 1900 characters)") }
        }
        if let interval = value("AWAY_MESSAGE_INTERVAL") {
            if let parsed = DeskSettings.interval(interval) { desk.awayInterval = parsed } else { problem.invalid.append("AWAY_MESSAGE_INTERVAL (12h, 30m, 90s or seconds; at most a year)") }
        }
    }
}
