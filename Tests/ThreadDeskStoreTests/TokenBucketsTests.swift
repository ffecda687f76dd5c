import Testing
import ThreadDeskStore

@Suite("Token buckets in memory")
struct TokenBucketsTests {
    /// Anyone can make keys at line rate (one per address, per user id). Pruning them must never
    /// forget a bucket that is still short of tokens, whatever limit the request that pruned had:
    /// an hourly thread budget spent is still spent after a burst of per-second keys.
    @Test func aBurstOfShortKeysDoesNotForgetAnHourlyBucket() {
        let buckets = TokenBuckets(maxKeys: 10)
        let start = ContinuousClock.now
        let hourly = QuotaLimit(2, per: .seconds(3600))
        #expect(buckets.take("thread:a:203.0.113.5", limit: hourly, now: start) == nil)
        #expect(buckets.take("thread:a:203.0.113.5", limit: hourly, now: start) == nil)
        #expect(buckets.take("thread:a:203.0.113.5", limit: hourly, now: start) != nil)

        // Two seconds later, many keys with a one-second period, each taken from once.
        let later = start.advanced(by: .seconds(2))
        for index in 0..<50 {
            #expect(buckets.take("read:u:user-\(index)", limit: QuotaLimit(5, per: .seconds(1)), now: later) == nil)
        }
        #expect(buckets.count <= 11)
        // Still spent: an hour's budget comes back over the hour, not when others pruned.
        #expect(buckets.take("thread:a:203.0.113.5", limit: hourly, now: later) != nil)
    }

    /// A bucket full again is the same as none: those go first, judged by their own period.
    @Test func bucketsFullAgainAreForgottenFirst() {
        let buckets = TokenBuckets(maxKeys: 11)
        let start = ContinuousClock.now
        for index in 0..<10 { _ = buckets.take("short-\(index)", limit: QuotaLimit(1, per: .seconds(1)), now: start) }
        _ = buckets.take("long", limit: QuotaLimit(1, per: .seconds(3600)), now: start)
        // A second on, the short ones are full again and go; the hourly one stays (it is empty).
        _ = buckets.take("new", limit: QuotaLimit(1, per: .seconds(1)), now: start.advanced(by: .seconds(1)))
        #expect(buckets.count == 2)
        #expect(buckets.take("long", limit: QuotaLimit(1, per: .seconds(3600)), now: start.advanced(by: .seconds(1))) != nil)
    }
}
