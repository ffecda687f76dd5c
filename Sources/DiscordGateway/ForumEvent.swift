import DiscordREST

/// What the gateway tells the server about the support forum (and the FAQ forum's posts, when one
/// is configured). Only events in those forums' threads are forwarded; everything else in the
/// guild stays in the daemon.
///
/// The two cases that carry a whole message keep it in a box of its own: inline, every event —
/// a `.typing` or an `.alive` too — would be as wide as a message (~340 bytes) in the daemon's
/// queue of up to 10,000.
public enum ForumEvent: Sendable, Hashable {
    indirect case messageCreated(DiscordMessage)
    /// An edit, with the whole message as it now is.
    indirect case messageUpdated(DiscordMessage)
    /// An edit whose payload did not carry the whole message: the server asks REST for it.
    case messageChanged(channelID: String, messageID: String)
    case messageDeleted(channelID: String, messageID: String)
    case messagesDeleted(channelID: String, messageIDs: [String])
    /// A forum thread changed: its archive and lock state, and the tags it shows (nil when the
    /// event did not say, as from a daemon older than the field).
    case threadUpdated(threadID: String, archived: Bool, locked: Bool, appliedTags: [String]? = nil)
    case threadDeleted(threadID: String)
    /// A member ran one of ThreadDesk's slash commands, is filling one in (autocomplete), clicked
    /// a button of one of its messages or submitted one of its modals: to be answered within 3 s.
    /// A server older than buttons skips the last two (their `data` is not a command's).
    indirect case interaction(DiscordInteraction)
    /// Someone started typing in a forum thread (TYPING_START; it lasts about 10 s).
    case typing(channelID: String, userID: String)
    /// A new session replaced a lost one: events in between may be missing, so catch up via REST.
    case gap
    /// The connection is up (ready, resumed, or a heartbeat went out): the feed is live.
    case alive
    /// A post of the FAQ forum was created or changed (title, tags, archived): one curated answer.
    case faqPost(threadID: String, title: String, tagIDs: [String])
    /// A FAQ post's starter message (the answer) was created or edited.
    indirect case faqStarter(DiscordMessage)
    /// A FAQ post's starter was edited but the payload did not carry it: the server asks REST.
    case faqStarterChanged(threadID: String)
    /// A FAQ post (or its starter message) was deleted: no longer an answer.
    case faqPostDeleted(threadID: String)
    /// Who may write answers may have changed: a guild role, or the FAQ forum's overwrites.
    case faqAccessChanged
}

/// Where forum events go: the server's handler in process, or the HTTP forwarder to it.
public protocol ForumEventSink: Sendable {
    func deliver(_ events: [ForumEvent]) async
}
