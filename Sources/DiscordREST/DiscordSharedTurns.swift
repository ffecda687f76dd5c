/// Turns on a Discord bucket that several processes of one bot spend (replicas of a server),
/// kept where they all see them.
public protocol DiscordSharedTurns: Sendable {
    /// Takes a turn on `key`, counted as Discord counts the bucket: fixed windows of `window`
    /// opened by their first request, `limit` requests each. A turn is given only while a request
    /// made up to `lateness` after it still reaches Discord in the window, and the next window
    /// opens once the last has surely closed. Nil when taken, else how long until one may be.
    func take(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration?
}
