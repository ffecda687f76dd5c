import DiscordREST
import ThreadDeskStore

/// A feature that enqueues notes of its own (crash reports) and acts once one is in the user's
/// thread: the outbox stands below it, so it tells it through this protocol, as the mirror tells
/// its listeners.
protocol DeliveredNoteListener: Sendable {
    /// `item` is delivered: `posts` are Discord's messages of it. Called under the user's lock,
    /// after the item left the outbox; what fails here is the listener's to log (the note stays).
    func delivered(_ item: OutboxItem, posts: [DiscordMessage], in context: inout UserContext) async
}
