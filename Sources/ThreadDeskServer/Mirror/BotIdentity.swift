import DiscordREST
import Synchronization

/// The bot's user id, learned from Discord once: its posts are the app user's own messages.
final class BotIdentity: Sendable {
    private let discord: DiscordClient<AnyClock>
    private let known = Mutex<(id: Snowflake, username: String)?>(nil)

    init(discord: DiscordClient<AnyClock>) {
        self.discord = discord
    }

    func id() async throws(DiscordError) -> Snowflake {
        try await user().id
    }

    /// Its id and username: the author the legacy routes show on a message Discord has not got yet.
    func user() async throws(DiscordError) -> (id: Snowflake, username: String) {
        if let user = known.withLock({ $0 }) { return user }
        let found = try await discord.currentUser()
        guard let id = Snowflake(found.id) else { throw .invalidResponse("the bot's user id is not a snowflake") }
        known.withLock { $0 = (id, found.username) }
        return (id, found.username)
    }
}
