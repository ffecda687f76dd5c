import HTTPTypes
import Crypto
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `POST /v1/rating`: the user's rating of the closed conversation that asked for one, once. The
/// score reaches the thread as a note (through the outbox, in the same commit as the rating's
/// request is taken away), the user's card and the metrics.
struct RatingService: Sendable {
    let users: UserSerializer
    let store: any UserStore
    let intake: OutboxIntake
    /// `rating.submitted` for the app's webhooks; nil: none.
    let webhooks: WebhookEvents?
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime

    /// Rates the conversation waiting for the user's rating. A retry under the same idempotency
    /// key answers the first rating (`created` false).
    /// - Throws: `APIError` 409 `already_rated` / `rating_not_requested`, 422 for a key reused with
    ///   another rating; the outbox's and the store's errors.
    func rate(_ submission: RatingSubmission, idempotencyKey: String?, for id: UserID, from address: String) async throws -> (SubmittedRating, created: Bool) {
        let comment = submission.comment.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        let fingerprint = SHA256.hash(data: Data("\(submission.score)\u{0}\(comment ?? "")".utf8)).map { String(format: "%02x", $0) }.joined()
        let date = time.now()
        let (rated, accepted) = try await OutboxIntake.retryingTakenIDs {
            try await users.withUser(id, idempotencyKey: idempotencyKey.map { "rating:" + $0 }) { context -> (ConversationRecord, OutboxIntake.Accepted?) in
                if let kept = context.keptResult {
                    guard kept.fingerprint == fingerprint else { throw SupportFailure.idempotencyKeyReused }
                    // The conversation the first request rated, by its id (the user may have had
                    // another since): rated already, so the store answers with its rating.
                    guard let number = kept.messageIDs.first.flatMap({ Int64($0) }) else { throw Self.notRequested }
                    switch try await store.rateConversation(number, owner: id, score: submission.score, comment: comment, at: date) {
                    case .alreadyRated(let conversation), .rated(let conversation): return (conversation, nil)
                    case .notRequested: throw Self.notRequested
                    }
                }
                guard let pending = context.record?.live.ratingRequest else {
                    if try await store.latestConversation(of: id)?.rating != nil { throw Self.alreadyRated }
                    throw Self.notRequested
                }
                // The note first: it is kept only if the rating is (one commit), and a rating
                // refused below leaves no note.
                let note = try await intake.accept(
                    .note, content: Self.note(score: submission.score, comment: comment), files: [], idempotencyKey: "rating:\(pending.conversationID)",
                    shown: false, in: &context, from: address, mayStartThread: false)
                switch try await store.rateConversation(pending.conversationID, owner: id, score: submission.score, comment: comment, at: date) {
                case .rated(let conversation):
                    context.record?.live.ratingRequest = nil
                    context.result = IdempotentResult(fingerprint: fingerprint, messageIDs: [String(conversation.id)])
                    webhooks?.record(.ratingSubmitted, app: id.app, owner: id, data: ConversationEvent(conversation), at: date, in: &context)
                    return (conversation, note)
                case .alreadyRated:
                    context.record?.live.ratingRequest = nil
                    context.enqueued.removeAll()
                    throw Self.alreadyRated
                case .notRequested:
                    context.record?.live.ratingRequest = nil
                    context.enqueued.removeAll()
                    throw Self.notRequested
                }
            }
        }
        if let accepted {
            intake.announce(accepted)
            metrics.lifecycle.rated(score: submission.score, app: id.app)
        }
        let rating = rated.rating ?? ConversationRating(score: submission.score, comment: comment, ratedAt: date)
        return (
            SubmittedRating(
                conversationId: String(rated.id), score: rating.score, comment: rating.comment, submittedAt: OutboxIntake.timestamp(rating.ratedAt)),
            accepted != nil
        )
    }

    static let alreadyRated = APIError(.conflict, .alreadyRated, "This conversation was rated already; the first rating stands.")
    static let notRequested = APIError(.conflict, .ratingNotRequested, "No closed conversation waits for a rating.")

    /// The note in the thread: the stars, the score, and the comment as text (escaped), within
    /// Discord's 2,000 characters (500 characters of emoji and markdown escaped can be more).
    static func note(score: Int, comment: String?) -> String {
        let stars = String(repeating: "★", count: score) + String(repeating: "☆", count: 5 - score)
        let head = "\(NoteMarkers.prefixes[0]) \(stars) \(score)/5"
        guard let comment else { return head }
        // Cut before escaping, so no escape is cut in half: each unit escaped is at most two.
        let room = (MessageText.discordLimit - head.utf16.count - 3) / 2
        return head + " — " + DiscordMarkdown.escaped(MessageText.clip(comment, limit: room))
    }
}
