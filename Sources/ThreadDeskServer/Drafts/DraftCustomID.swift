import ThreadDeskWire
import Logging
import DiscordREST

/// What a draft note's button or modal is for, carried in its `custom_id`: `td1:<draft id>:<action>`.
/// Discord sends the id back exactly; anything else (another application's, an older format)
/// parses to nil and is not ours.
struct DraftCustomID: Sendable, Hashable, CustomStringConvertible {
    enum Action: String, Sendable, CaseIterable {
        case send = "s"
        case edit = "e"
        case discard = "d"
        /// The edit modal's submit.
        case submitEdit = "m"
    }

    let draft: Snowflake
    let action: Action

    static let prefix = "td1:"

    var description: String { "\(Self.prefix)\(draft):\(action.rawValue)" }

    init(draft: Snowflake, action: Action) { (self.draft, self.action) = (draft, action) }

    /// Parses `td1:<snowflake>:<s|e|d|m>`; nil for anything else.
    init?(_ text: String) {
        guard text.utf8.count <= 100, text.hasPrefix(Self.prefix) else { return nil }
        let parts = text.dropFirst(Self.prefix.count).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let id = Snowflake(String(parts[0])), let action = Action(rawValue: String(parts[1])) else { return nil }
        self.init(draft: id, action: action)
    }

    /// Whether `text` claims to be ours (whether or not it parses): such interactions go to the drafts.
    static func isOurs(_ text: String) -> Bool { text.hasPrefix(prefix) }
}
