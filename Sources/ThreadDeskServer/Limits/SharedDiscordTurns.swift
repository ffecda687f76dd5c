import DiscordREST
import ThreadDeskStore

/// Turns on Discord's shared buckets kept in the store every replica shares (its turn windows),
/// so the replicas together go at the bucket's pace, not each at its own.
struct SharedDiscordTurns: DiscordSharedTurns {
    let store: any QuotaBuckets

    func take(_ key: String, limit: Int, window: Duration, lateness: Duration) async throws -> Duration? {
        try await store.takeWindowTurn("discord-window:" + key, limit: limit, window: window, lateness: lateness)
    }
}
