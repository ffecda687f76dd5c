/// Turns on a Discord bucket that several processes of one bot spend (replicas of a server),
/// kept where they all see them.
public protocol DiscordSharedTurns: Sendable {
    /// Takes a turn on `key`, a token bucket shared by all the processes: `burst` turns at once,
    /// then one per `every`. Nil when taken, else how long until the next is free.
    func take(_ key: String, burst: Int, every: Duration) async throws -> Duration?
}
