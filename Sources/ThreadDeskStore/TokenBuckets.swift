import Synchronization

/// Token buckets in process memory, for the stores that serve from one process (memory,
/// SQLite). Bounded: past `maxKeys` buckets, full ones are forgotten first (a full bucket is the
/// same as none), then the longest unused.
public final class TokenBuckets: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
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
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.count), at: now)
            let elapsed = max(0, bucket.at.duration(to: now) / .seconds(1))
            bucket.tokens = min(Double(limit.count), bucket.tokens + elapsed * limit.rate)
            bucket.at = now
            defer {
                buckets[key] = bucket
                if buckets.count > maxKeys { Self.prune(&buckets, limit: limit, now: now, to: maxKeys * 9 / 10) }
            }
            if bucket.tokens >= cost {
                bucket.tokens -= cost
                return nil
            }
            return .milliseconds(Int64(((cost - bucket.tokens) / limit.rate * 1000).rounded(.up)))
        }
    }

    public var count: Int { buckets.withLock { $0.count } }

    private static func prune(_ buckets: inout [String: Bucket], limit: QuotaLimit, now: ContinuousClock.Instant, to size: Int) {
        buckets = buckets.filter { $0.value.at.duration(to: now) < limit.period }
        guard buckets.count > size else { return }
        let oldest = buckets.sorted { $0.value.at < $1.value.at }.prefix(buckets.count - size).map(\.key)
        for key in oldest { buckets[key] = nil }
    }
}
