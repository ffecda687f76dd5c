import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `POST /v1/rating`: the user rates the closed conversation that asked for it.
struct RatingRoutes: Sendable {
    let ratings: RatingService
    let quotas: Quotas

    /// 500 characters of up to 32 scalars each, escaped as JSON.
    static let limit = 256 * 1024

    func register(on groups: V1Groups) {
        groups.users(charging: { .update($0) }).post("rating", use: rate)
    }

    @Sendable func rate(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let key = request.headers[.idempotencyKey]
        if let key, !IdempotencyKey.isValid(key) {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        let submission = try await request.decode(RatingSubmission.self, limit: Self.limit, invalid: ["score": .invalidRating, "comment": .invalidRating])
        try Self.validate(submission)
        let (rating, created) = try await ratings.rate(submission, idempotencyKey: key, for: user, from: quotas.clientAddress(request, context))
        return try jsonResponse(RatingResponse(rating: rating), status: created ? .created : .ok)
    }

    /// A score of 1 to 5 and a comment of at most 500 characters, without control characters
    /// other than line breaks and tabs.
    static func validate(_ submission: RatingSubmission) throws {
        guard RatingSubmission.scores.contains(submission.score) else {
            throw APIError.badRequest(.invalidRating, "score must be a whole number from 1 to 5.")
        }
        guard let comment = submission.comment else { return }
        guard comment.utf16.count <= 64 * RatingSubmission.commentLimit, comment.count <= RatingSubmission.commentLimit else {
            throw APIError.badRequest(.invalidRating, "comment must be at most \(RatingSubmission.commentLimit) characters.")
        }
        if comment.contains(where: { $0.unicodeScalars.count > MessageText.maxScalarsPerCharacter }) {
            throw APIError.badRequest(.invalidRating, "comment has a character of more than \(MessageText.maxScalarsPerCharacter) Unicode scalars.")
        }
        if let control = ControlCharacters.first(in: comment) {
            throw APIError.badRequest(.invalidRating, "comment holds the control character \(ControlCharacters.name(control)); only line breaks and tabs are allowed.")
        }
    }
}
