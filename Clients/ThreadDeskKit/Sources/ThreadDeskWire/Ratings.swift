/// Data of `rating.requested`, and `ratingRequest` of a message page: a conversation support
/// answered was closed, and the user may rate it once.
public struct RatingRequest: Sendable, Codable, Hashable {
    /// The closed conversation's id.
    public var conversationId: String
    /// When it was closed (ISO 8601).
    public var requestedAt: String

    public init(conversationId: String, requestedAt: String) {
        self.conversationId = conversationId
        self.requestedAt = requestedAt
    }
}

/// The JSON body of `POST /v1/rating`.
public struct RatingSubmission: Sendable, Codable, Hashable {
    /// 1 (poor) to 5 (excellent).
    public var score: Int
    /// At most 500 characters; optional.
    public var comment: String?

    public init(score: Int, comment: String? = nil) {
        self.score = score
        self.comment = comment
    }

    /// The range of a score.
    public static let scores = 1...5
    /// The longest comment, in characters.
    public static let commentLimit = 500
}

/// `POST /v1/rating`: the rating as the server keeps it.
public struct SubmittedRating: Sendable, Codable, Hashable {
    public var conversationId: String
    public var score: Int
    public var comment: String?
    /// ISO 8601.
    public var submittedAt: String

    public init(conversationId: String, score: Int, comment: String?, submittedAt: String) {
        self.conversationId = conversationId
        self.score = score
        self.comment = comment
        self.submittedAt = submittedAt
    }
}

/// The answer of `POST /v1/rating`.
public struct RatingResponse: Sendable, Codable, Hashable {
    public var rating: SubmittedRating

    public init(rating: SubmittedRating) {
        self.rating = rating
    }
}
