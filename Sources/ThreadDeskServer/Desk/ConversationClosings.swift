import DiscordREST
import ThreadDeskCore

/// What becomes of a conversation when an agent closes or reopens it, beyond its thread: kept by
/// a feature above the desk (the conversations' lifecycle: ratings, scheduled closes), which the
/// desk knows only by this protocol.
protocol ConversationClosings: Sendable {
    /// `/close` (after its last reply, if any, was posted).
    func agentClosed(_ owner: UserID, thread: Snowflake) async throws
    /// `/reopen`.
    func agentReopened(_ owner: UserID, thread: Snowflake) async throws
    /// `/close in:` with the delay as the agent typed it (`2h`, `30m`, `1d`): the answer the agent reads.
    func scheduleClose(_ owner: UserID, thread: Snowflake, after delay: String, by agent: String) async throws -> String
}
