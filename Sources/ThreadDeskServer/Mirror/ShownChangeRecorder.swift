import DiscordREST
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// A change of a message the user sees (or saw), as it leaves the deployment: notes never are one.
enum ShownChange: Sendable, Hashable {
    /// The user can see it now, and could not before (a new message, a note made visible).
    case created(MirroredMessage)
    /// Its text, files or edit time changed while shown.
    case updated(MirroredMessage)
    /// Gone from the user's view (deleted, or edited into a note: then nothing of it is told).
    case deleted(id: Snowflake)
}

/// Told of what the mirror stored that the user sees, under the owner's lock: the signed webhooks
/// record it (`WebhookEvents`). The mirror knows them only by this protocol; the root passes one.
protocol ShownChangeRecorder: Sendable {
    /// A user's message accepted into the outbox (its `queued` row), in the accepting transaction.
    func accepted(_ row: MirroredMessage, owner: UserID, in context: inout UserContext)
    /// Changes a merge (or an outbox change) stored. A user's message reaching Discord is none:
    /// it was told when accepted.
    func stored(_ changes: [ShownChange], owner: UserID) async
}

extension ShownChange {
    /// What the user sees change from `before` to `after` (nil when nothing they see did). Parts
    /// of a split send after the first are no messages of their own; a message the outbox kept
    /// reaching Discord is no change.
    static func between(_ before: MirroredMessage?, _ after: MirroredMessage) -> ShownChange? {
        guard after.partOf == nil, before?.partOf == nil else { return nil }
        let was = before?.isShown == true
        switch (was, after.isShown) {
        case (false, true): return .created(after)
        case (true, false): return .deleted(id: after.id)
        case (false, false): return nil
        case (true, true):
            // Discord's copy of a message the outbox kept: what the user wrote (its edits while it
            // waited told then), sent at last; a long one's first post holds only its first part.
            guard let before, !(before.delivery != .sent && after.delivery == .sent) else { return nil }
            let sameFiles = before.attachments.map { ($0.id, $0.filename) }.elementsEqual(after.attachments.map { ($0.id, $0.filename) }) { $0 == $1 }
            if before.content == after.content, before.editedAt == after.editedAt, sameFiles { return nil }
            return .updated(after)
        }
    }
}
