/// `GET /v1/suggestions?q=`: the curated answers that best match what the user has typed so far,
/// best first (at most five).
public struct Suggestions: Sendable, Codable, Hashable {
    public var suggestions: [Suggestion]

    public init(suggestions: [Suggestion]) {
        self.suggestions = suggestions
    }
}

/// One curated answer: a post of the FAQ forum in Discord.
public struct Suggestion: Sendable, Codable, Hashable, Identifiable {
    /// The post's id; send it back as `suggestionId` with a message written right after it was shown.
    public var id: String
    /// The question.
    public var title: String
    /// The answer (Discord markdown).
    public var answer: String

    public init(id: String, title: String, answer: String) {
        self.id = id
        self.title = title
        self.answer = answer
    }
}
