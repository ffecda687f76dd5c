import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Ratings: once support closed a conversation it answered, the user may rate it, once.
extension ThreadDeskClient {
    /// Rates the closed conversation that waits for a rating (a ``ThreadDeskEvent/ratingRequested(_:)``
    /// event, a page's `ratingRequest`, a ``SupportRatingPush``): `POST /v1/rating`.
    ///
    /// The comment is sent trimmed, and none when blank. A score outside 1...5 or a comment over
    /// 500 characters (as `String.count` counts them) is refused before anything is sent, with a
    /// ``ThreadDeskError`` of kind ``ThreadDeskError/Kind-swift.struct/invalidInput`` and code
    /// `ErrorCode.invalidRating`.
    ///
    /// Retried with the same `idempotencyKey` after a timeout or a 503, and safe to call again
    /// with it after an answer that never came: the server keeps the first rating and answers
    /// it again. Use one key per request (``SupportConversation/rate(score:comment:)`` does).
    /// The server's refusals: 409 `ErrorCode.alreadyRated` (rated already, from this device or
    /// another: done), 409 `ErrorCode.ratingNotRequested` (nothing waits), 400
    /// `ErrorCode.invalidRating`.
    @discardableResult
    public func rate(_ submission: RatingSubmission, idempotencyKey: String) async throws(ThreadDeskError) -> SubmittedRating {
        let submission = try submission.checked()
        return try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/rating", method: "POST", token: token)
            request.setValue(idempotencyKey, forHTTPHeaderField: APIHeader.idempotencyKey)
            try encode(submission, into: &request)
            // Signed when the server asks for it (an attested session), as a first message is.
            return try decode(RatingResponse.self, from: try await sendAsserting(request)).rating
        }
    }
}

extension RatingSubmission {
    /// The submission as it is sent (the comment trimmed, none when blank), or why the server
    /// would refuse it.
    func checked() throws(ThreadDeskError) -> RatingSubmission {
        guard Self.scores.contains(score) else {
            throw .invalidInput(.invalidRating, "a score is \(Self.scores.lowerBound) to \(Self.scores.upperBound), not \(score)")
        }
        let text = comment?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard text.count <= Self.commentLimit else {
            throw .invalidInput(.invalidRating, "a comment is at most \(Self.commentLimit) characters, not \(text.count)")
        }
        return RatingSubmission(score: score, comment: text.isEmpty ? nil : text)
    }
}
