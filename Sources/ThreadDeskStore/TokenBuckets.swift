import Synchronization

/// Token buckets in process memory, for the stores that serve from one process (memory,
/// SQLite). Bounded: past `maxKeys` buckets, the ones full again are forgotten (a full bucket is
/// the same as none; each bucket is judged by its own limit, so a burst of short-period keys never
/// forgets an hourly bucket), then the fullest, so an emptied bucket is the last to go.
public final class TokenBuckets: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
        var limit: QuotaLimit

        /// How full the bucket is at `now`, from 0 (empty) to 1 (full: as good as forgotten).
        func fullness(at now: ContinuousClock.Instant) -> Double {
            let elapsed = max(0, at.duration(to: now) / .seconds(1))
            return min(Double(limit.count), tokens + elapsed * limit.rate) / Double(limit.count)
        }
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    private let maxKeys: Int

    public init(maxKeys: Int = 100_000) {
        self.maxKeys = maxKeys
    }

    /// Takes `cost` tokens (at most the bucket's size: a cost bigger than the bucket takes all of
    /// it); nil when taken, else how long until there are enough.
    public func take(_ key: String, limit: QuotaLimit, cost: Double = 1, now: ContinuousClock.Instant = .now) -> Duration? {
        guard limit.count > 0 else { return nil }
        let cost = min(max(cost, 0), Double(limit.count))
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.count), at: now, limit: limit)
            bucket.limit = limit
            let elapsed = max(0, bucket.at.duration(to: now) / .seconds(1))
            bucket.tokens = min(Double(limit.count), bucket.tokens + elapsed * limit.rate)
            bucket.at = now
            defer {
                buckets[key] = bucket
                if buckets.count > maxKeys { Self.prune(&buckets, now: now, to: maxKeys * 9 / 10) }
            }
            if bucket.tokens >= cost {
                bucket.tokens -= cost
                return nil
            }
            return .milliseconds(Int64(((cost - bucket.tokens) / limit.rate * 1000).rounded(.up)))
        }
    }

    /// Puts `cost` tokens back into the bucket `key` (never above its size): what a request took
    /// and then could not be served for a reason of the server's own.
    public func giveBack(_ key: String, limit: QuotaLimit, cost: Double = 1) {
        guard limit.count > 0 else { return }
        let cost = min(max(cost, 0), Double(limit.count))
        buckets.withLock { buckets in
            guard var bucket = buckets[key] else { return }
            bucket.tokens = min(Double(limit.count), bucket.tokens + cost)
            buckets[key] = bucket
        }
    }

    public var count: Int { buckets.withLock { $0.count } }

    /// Forgets the buckets `keys` (a user erased).
    public func forget(keys: [String]) {
        buckets.withLock { buckets in
            for key in keys { buckets[key] = nil }
        }
    }

    private static func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, to size: Int) {
        buckets = buckets.filter { $0.value.fullness(at: now) < 1 }
        guard buckets.count > size else { return }
        let fullest = buckets.map { (key: $0.key, fullness: $0.value.fullness(at: now)) }
            .sorted { $0.fullness > $1.fullness }.prefix(buckets.count - size).map(\.key)
        for key in fullest { buckets[key] = nil }
    }
}
