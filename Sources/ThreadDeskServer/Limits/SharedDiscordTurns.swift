import DiscordREST
import ThreadDeskStore

/// Turns on Discord's shared buckets kept in the store every replica shares (its token buckets),
/// so the replicas together go at the bucket's pace, not each at its own.
struct SharedDiscordTurns: DiscordSharedTurns {
    let store: any QuotaBuckets

    func take(_ key: String, burst: Int, every: Duration) async throws -> Duration? {
        try await store.takeToken("discord-turn:" + key, limit: QuotaLimit(burst, per: every * burst), cost: 1)
    }
}
