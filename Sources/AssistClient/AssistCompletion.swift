/// The model's answer.
public struct AssistCompletion: Sendable {
    public var text: String
    /// `stop`, `length` (cut by `maxTokens`), or whatever the provider said; nil when it said nothing.
    public var finishReason: String?
    public var usage: AssistUsage
    /// HTTP attempts it took, the one that answered included.
    public var attempts: Int

    public init(text: String, finishReason: String?, usage: AssistUsage, attempts: Int) {
        self.text = text
        self.finishReason = finishReason
        self.usage = usage
        self.attempts = attempts
    }
}

/// Tokens a completion cost, as the provider counted them, or estimated when it did not say.
public struct AssistUsage: Sendable, Hashable {
    public var prompt: Int
    public var completion: Int
    /// True when either number is our estimate (`estimatedTokens(in:)`), not the provider's count.
    public var estimated: Bool

    public init(prompt: Int, completion: Int, estimated: Bool) {
        self.prompt = prompt
        self.completion = completion
        self.estimated = estimated
    }

    /// ⌈UTF-8 bytes / 4⌉: the usual four characters a token for English, and more tokens than
    /// characters/4 for scripts that take several bytes, so a budget built on it errs high.
    public static func estimatedTokens(in text: String) -> Int {
        (text.utf8.count + 3) / 4
    }

    /// The estimate for a whole prompt: every message's content.
    public static func estimatedTokens(in messages: [AssistMessage]) -> Int {
        messages.reduce(0) { $0 + estimatedTokens(in: $1.content) }
    }
}
