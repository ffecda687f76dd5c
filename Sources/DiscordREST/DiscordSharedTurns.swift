/// Turns on a Discord bucket that several processes of one bot spend (replicas of a server),
/// kept where they all see them.
public protocol DiscordSharedTurns: Sendable {
    /// Takes the next turn on `key`, one per `interval` among all the processes: nil when taken,
    /// else how long until the next is free.
    func take(_ key: String, interval: Duration) async throws -> Duration?
}
