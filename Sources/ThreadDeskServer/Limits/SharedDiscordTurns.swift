import DiscordREST
import ThreadDeskStore

/// Turns on Discord's shared buckets kept in the store every replica shares: a token bucket of
/// one per turn, so the replicas together go at the bucket's pace, not each at its own.
struct SharedDiscordTurns: DiscordSharedTurns {
    let store: any QuotaBuckets

    func take(_ key: String, interval: Duration) async throws -> Duration? {
        try await store.takeToken("discord-turn:" + key, limit: QuotaLimit(1, per: interval), cost: 1)
    }
}
