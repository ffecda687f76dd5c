import Foundation
import ThreadDeskStore

/// Why the services refuse a request, in the domain's words. The HTTP layer alone turns these
/// into a status and an `ErrorCode` (in HTTP/); Discord's own failures travel as
/// `DiscordError` and the store's as `StoreUnavailableError`, mapped there too.
enum SupportFailure: Error, Sendable, Equatable {
    /// No live token of a user: never had, signed out, or ended by a newer session.
    case notAuthenticated
    /// The app backend's `userHash` does not vouch for the requested id.
    case invalidUserHash
    /// The id is in use, and neither one of its tokens nor its `userHash` came with the claim.
    case userClaimed
    /// A legacy call for a user of `/v1`.
    case notALegacyUser
    /// The idempotency key was used for another request.
    case idempotencyKeyReused
    /// The message was posted, but the mirror does not have it (yet) to answer with.
    case alreadySent
    /// Not one of the user's own visible messages in their thread.
    case messageNotFound
    /// No message the user can see in their conversation (a read mark's target).
    case notInConversation
    /// An edit needs more Discord posts than the message it edits used.
    case editTooLong(needed: Int, original: Int)
    /// No attachment of this id in the user's conversation (or Discord no longer has it).
    case attachmentNotFound(gone: Bool)
    /// Discord's CDN does not hand out the file right now.
    case attachmentUnavailable
    /// The forum requires a tag and has none.
    case forumNeedsTag
    /// A limit is spent until `retryAfter` has passed.
    case limitReached(name: String, limit: QuotaLimit, retryAfter: Duration)
    /// The outbox holds as much as it may (`scope`: the deployment's or the user's): nothing more
    /// is accepted until some of it reaches Discord.
    case outboxFull(scope: String, retryAfter: Duration)
    /// The message is being delivered (some of its posts are in Discord): an edit or delete waits
    /// until it is.
    case delivering
    /// A failed message some of whose parts reached Discord, edited to another text.
    case partlyDelivered
}
