/// One message of a conversation sent to the model.
public struct AssistMessage: Sendable, Codable, Hashable {
    public enum Role: String, Sendable, Codable { case system, user, assistant }

    public var role: Role
    public var content: String

    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }
}

/// A chat completion to ask for: the conversation, how long the answer may be, how inventive.
public struct AssistRequest: Sendable {
    public var messages: [AssistMessage]
    public var maxTokens: Int
    /// Nil leaves it to the provider.
    public var temperature: Double?

    public init(messages: [AssistMessage], maxTokens: Int, temperature: Double? = nil) {
        self.messages = messages
        self.maxTokens = maxTokens
        self.temperature = temperature
    }
}
