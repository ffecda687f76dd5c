extension AssistEmulator {
    /// Token counts as a provider would report them, estimated the same way everywhere so tests
    /// can predict them: a token is four bytes of UTF-8, and each message costs three more.
    struct Usage: Sendable, Equatable {
        var prompt: Int
        var completion: Int
        var total: Int { prompt + completion }

        init(prompt messages: [RecordedRequest.Message], completion text: String) {
            prompt = messages.reduce(0) { $0 + Self.tokens(in: $1.content) + 3 }
            completion = Self.tokens(in: text)
        }

        static func tokens(in text: String) -> Int { (text.utf8.count + 3) / 4 }
    }

    /// The reply cut to `maxTokens` (four bytes each, never inside a character); whether it was cut.
    static func truncated(_ text: String, maxTokens: Int?) -> (text: String, cut: Bool) {
        guard let maxTokens, text.utf8.count > maxTokens * 4 else { return (text, false) }
        var kept = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= maxTokens * 4 else { break }
            kept.append(character)
            bytes += size
        }
        return (kept, true)
    }
}
