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
    /// The answer's files (screenshots), fetched through ThreadDesk like a message's.
    public var attachments: [SupportMessage.Attachment]

    public init(id: String, title: String, answer: String, attachments: [SupportMessage.Attachment] = []) {
        self.id = id
        self.title = title
        self.answer = answer
        self.attachments = attachments
    }

    private enum CodingKeys: String, CodingKey { case id, title, answer, attachments }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        answer = try container.decode(String.self, forKey: .answer)
        attachments = try container.decodeIfPresent([SupportMessage.Attachment].self, forKey: .attachments) ?? []
    }
}
