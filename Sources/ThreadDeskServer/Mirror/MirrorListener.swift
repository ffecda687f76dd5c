import DiscordREST
import ThreadDeskCore
import ThreadDeskStore

/// What one merge took into the mirror for a thread, once it is stored.
struct MirrorIntake: Sendable {
    /// The thread's user.
    let owner: UserID
    let thread: Snowflake
    /// Whether the user can see any of what changed (their event streams have news).
    let visibleToUser: Bool
    /// The newest message the user can see that entered the mirror in this merge: who spoke last.
    let newestShown: MirroredMessage?
    /// Whether a message entered waiting for its push.
    let pushesPending: Bool
    /// Every message the user can see that entered the mirror in this merge (or reached Discord
    /// from the outbox), oldest first; `newestShown` is the last of them.
    var shown: [MirroredMessage] = []
}

/// Told of every merge that changed the mirror: the live hub wakes the user's streams, the push
/// dispatcher sends what waits, the status tags follow the conversation. The mirror knows them
/// only by this protocol; the composition root lists them. A listener returns at once: it queues
/// or wakes its own work (the caller holds the user's lock).
protocol MirrorListener: Sendable {
    func mirrorTookIn(_ intake: MirrorIntake)
}

/// Told of every merge that took in a message the user can see, before the listeners and still
/// under the owner's lock, and awaited: what it keeps of the merge (a conversation's waits and
/// answers) is in the store before the next merge of that user begins. It handles its own
/// failures (the mirror's merge stands either way).
protocol MirrorRecorder: Sendable {
    func record(_ intake: MirrorIntake) async
    /// A user's message accepted into the outbox (its `queued` row), in the user's transaction:
    /// what it keeps in `context` commits with the message, before anything else is recorded of it.
    func accepted(_ message: MirroredMessage, owner: UserID, in context: inout UserContext) async
}

/// Which first-seen support replies wait for a push (`PUSH_*` settings, as the root reads them);
/// nil in the mirror when pushes are off.
struct PushRule: Sendable {
    /// Older replies (a catch-up after a long outage) are no news.
    var maxAge: Duration
    /// Whether a silent reply (`:cold:`) still gets a background push.
    var background: Bool
}
