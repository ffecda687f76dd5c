import DiscordREST

/// What setting a thread's status takes, decided from what the thread shows and the forum's tag
/// ids alone: the PATCHes to make, what the thread shows after them, and whether support is told
/// the conversation came back. Pure (no store, no network), so every case is tested as a value.
struct StatusTagPlan: Sendable, Equatable {
    /// One PATCH of the thread: its archived flag and its tags (nil leaves either as it is).
    struct Edit: Sendable, Equatable {
        var archived: Bool?
        var appliedTags: [String]?
    }

    /// In order; never empty.
    var edits: [Edit]
    /// The tags the thread shows afterwards: the agent's own (at most 4) and the status's.
    var tags: [String]
    /// Whether the thread is archived afterwards.
    var archived: Bool
    /// The user wrote again after `/close`: support reads a note that the conversation is back.
    var announcesReopening: Bool

    /// Whether `next` needs any call at all: not when the store's note says the thread shows that
    /// status for sure and nothing is to be archived or brought back.
    static func isNeeded(_ next: StatusTags.Desired, note: StatusTags.ShownNote?) -> Bool {
        !(note?.status == next.status && note?.unsure != true && next.archive == nil)
    }

    /// The plan that makes a thread showing `tags` (`archived` or not), last given `shownStatus`,
    /// show `next`; nil when the forum has no tag for it.
    init?(
        _ next: StatusTags.Desired, showing current: (tags: [String], archived: Bool), lastGiven shownStatus: ConversationStatus?,
        ids: [ConversationStatus: String]
    ) {
        guard let tag = ids[next.status] else { return nil }
        let ours = Set(ids.values)
        // The agent's tags stay, within Discord's 5 per thread.
        tags = Array(current.tags.filter { !ours.contains($0) }.prefix(4)) + [tag]
        if current.archived, next.archive != false, next.status != .needsReply {
            // Discord changes an archived thread only together with `archived: false`: out of the
            // archive with the new tag, then back in (an archived thread stays archived).
            edits = [Edit(archived: false, appliedTags: tags), Edit(archived: true)]
            archived = true
        } else if current.archived, next.status == .needsReply {
            // The user wrote: the conversation is open again, whatever was pending.
            edits = [Edit(archived: false, appliedTags: tags)]
            archived = false
        } else {
            edits = [Edit(archived: next.archive, appliedTags: tags)]
            archived = next.archive ?? current.archived
        }
        // With their post Discord brought the thread back itself.
        announcesReopening = shownStatus == .resolved && next.status == .needsReply && next.archive == nil
    }
}
