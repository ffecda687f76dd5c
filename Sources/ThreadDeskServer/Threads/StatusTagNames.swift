import Foundation

/// The names of the status tags (`STATUS_TAGS`).
public struct StatusTagNames: Sendable, Hashable {
    public var needsReply = "needs reply"
    public var waitingOnUser = "waiting on user"
    public var resolved = "resolved"
    /// Beside the status, on a thread whose user's app crashed (crash reports); made in the forum
    /// the first time a thread needs it.
    public var crash = "crash"

    public init() {}

    /// Three different names of 1–20 characters (Discord's limit for a tag), comma separated.
    init?(list: String) {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard names.count == 3, Set(names.map { $0.lowercased() }).count == 3, names.allSatisfy({ (1...20).contains($0.count) }) else {
            return nil
        }
        (needsReply, waitingOnUser, resolved) = (names[0], names[1], names[2])
    }

    func name(of status: ConversationStatus) -> String {
        switch status {
        case .needsReply: needsReply
        case .waitingOnUser: waitingOnUser
        case .resolved: resolved
        }
    }
}

/// Where a conversation stands, as the forum's list shows it.
enum ConversationStatus: String, Sendable, CaseIterable {
    /// The user wrote last.
    case needsReply = "needs-reply"
    /// Support answered last.
    case waitingOnUser = "waiting-on-user"
    /// Closed by an agent.
    case resolved
}
