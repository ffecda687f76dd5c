import DiscordREST
import Synchronization

/// The bot's user id, learned from Discord once: its posts are the app user's own messages.
final class BotIdentity: Sendable {
    private let discord: DiscordClient<AnyClock>
    private let known = Mutex<Snowflake?>(nil)

    init(discord: DiscordClient<AnyClock>) {
        self.discord = discord
    }

    func id() async throws(DiscordError) -> Snowflake {
        if let id = known.withLock({ $0 }) { return id }
        let raw = try await discord.currentUser().id
        guard let id = Snowflake(raw) else { throw .invalidResponse("the bot's user id is not a snowflake") }
        known.withLock { $0 = id }
        return id
    }
}
