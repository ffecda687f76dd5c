import DiscordREST

/// What the gateway tells the server about the support forum. Only events in the forum's
/// threads are forwarded; everything else in the guild stays in the daemon.
public enum ForumEvent: Sendable, Codable, Hashable {
    case messageCreated(DiscordMessage)
    case messageUpdated(channelID: String, messageID: String)
    case messageDeleted(channelID: String, messageID: String)
    case threadUpdated(threadID: String, archived: Bool, locked: Bool)
    case threadDeleted(threadID: String)
    /// A new session replaced a lost one: events in between may be missing, so catch up via REST.
    case gap
}

/// Where forum events go: the server's handler in process, or the HTTP forwarder to it.
public protocol ForumEventSink: Sendable {
    func deliver(_ events: [ForumEvent]) async
}
