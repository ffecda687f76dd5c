import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Ratings: once support closed a conversation it answered, the user may rate it, once.
extension ThreadDeskClient {
    /// Rates the closed conversation that waits for a rating (a ``ThreadDeskEvent/ratingRequested(_:)``
    /// event, a page's `ratingRequest`, a rating push): `POST /v1/rating`.
    ///
    /// Retried with the same `idempotencyKey` after a timeout or a 503, and safe to call again
    /// with it after an answer that never came: the server keeps the first rating and answers
    /// it again. Use one key per request (``SupportConversation/rate(score:comment:)`` does).
    /// Refusals: 409 ``ErrorCode/alreadyRated`` (rated already, from this device or another:
    /// done), 409 ``ErrorCode/ratingNotRequested`` (nothing waits), 400 ``ErrorCode/invalidRating``
    /// (a score outside 1...5 or a comment over 500 characters).
    @discardableResult
    public func rate(_ submission: RatingSubmission, idempotencyKey: String) async throws(ThreadDeskError) -> SubmittedRating {
        try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/rating", method: "POST", token: token)
            request.setValue(idempotencyKey, forHTTPHeaderField: APIHeader.idempotencyKey)
            try encode(submission, into: &request)
            // Signed when the server asks for it (an attested session), as a first message is.
            return try decode(RatingResponse.self, from: try await sendAsserting(request)).rating
        }
    }
}
