/// Keeps requests inside Discord's limits so that none is sent that Discord would refuse.
///
/// Buckets are learned from `X-RateLimit-Bucket` and kept per bucket and major parameter, so a
/// busy thread waits on its own bucket only. Until a route's bucket is known, one request goes
/// first and the rest wait for what it teaches. A sliding log enforces the global limit.
///
/// A request may reach Discord well after it was let go (a busy machine, a queue in the HTTP
/// client), so it counts as in flight until its answer comes: a bucket's next window starts with
/// its in-flight requests already spent, and the global log counts a request from its answer,
/// not from its start. Without that, late arrivals spill into the next window and earn 429s.
public actor DiscordRateLimiter<C: Clock> where C.Duration == Duration {
    public struct Configuration: Sendable {
        /// Discord's global limit per bot: 50 requests per second.
        public var globalLimit = 50
        public var globalWindow: Duration = .seconds(1)
        /// Added to every reset the client computes, for clock skew and network latency.
        public var safetyMargin: Duration = .milliseconds(50)

        public init() {}
    }

    /// What `acquire` hands out and `complete` takes back.
    public struct Ticket: Sendable {
        let key: String
        let route: String
        let major: String
        let generation: Int
        let discovering: Bool
        /// Whether it counts toward the bot's global limit (interaction answers do not).
        var global = true
    }

    /// The rate-limit headers of one response.
    public struct Headers: Sendable, Equatable {
        public var bucket: String?
        public var limit: Int?
        public var remaining: Int?
        public var resetAfter: Duration?

        public init(bucket: String?, limit: Int?, remaining: Int?, resetAfter: Duration?) {
            self.bucket = bucket
            self.limit = limit
            self.remaining = remaining
            self.resetAfter = resetAfter
        }
    }

    private struct Bucket {
        var limit: Int?
        var remaining = 0
        var resetAt: C.Instant?
        /// Whether `resetAt` came from a response of the current window, not our own estimate.
        var resetConfirmed = false
        var window: Duration = .seconds(1)
        /// Whether `window` came from the answer to a window's first request (else it is a guess).
        var windowLearned = false
        /// The longest `reset-after` heard: the window is at least this long.
        var longestResetAfter: Duration = .zero
        var generation = 0
        var discovering = false
        /// Let go and not answered yet.
        var inFlight = 0
    }

    private let clock: C
    private let configuration: Configuration
    private var routeBuckets: [String: String] = [:]
    private var buckets: [String: Bucket] = [:]
    private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// When the latest answers came (at most `globalLimit` of them), and requests still unanswered.
    private var globalLog: [C.Instant] = []
    private var globalInFlight = 0
    private var globalBlockedUntil: C.Instant?

    public init(clock: C, configuration: Configuration = .init()) {
        self.clock = clock
        self.configuration = configuration
    }

    private func key(route: String, major: String) -> String {
        (routeBuckets[route] ?? "route:" + route) + ":" + major
    }

    /// Waits until a request on `route` (method and template) for `major` may go; throws
    /// `DiscordError.rateLimited` when that would be after `deadline`.
    /// `global: false` for the routes Discord leaves out of the global limit (interaction
    /// answers and follow-ups).
    public func acquire(route: String, major: String, deadline: C.Instant, global: Bool = true) async throws -> Ticket {
        while true {
            try Task.checkCancellation()
            let now = clock.now
            let key = key(route: route, major: major)
            var bucket = buckets[key] ?? Bucket()
            if bucket.limit == nil {
                if bucket.discovering {
                    await waitForChange(of: key)
                    continue
                }
            } else {
                if let resetAt = bucket.resetAt, now >= resetAt {
                    bucket.remaining = max(0, bucket.limit! - bucket.inFlight)
                    bucket.resetAt = nil
                    bucket.resetConfirmed = false
                    bucket.generation += 1
                }
                if bucket.remaining <= 0, let resetAt = bucket.resetAt {
                    buckets[key] = bucket
                    try await sleep(until: resetAt, deadline: deadline)
                    continue
                }
            }
            if global, let wait = globalWait(now: now) {
                buckets[key] = bucket
                try await sleep(until: wait, deadline: deadline)
                continue
            }
            let discovering = bucket.limit == nil
            if discovering {
                bucket.discovering = true
            } else {
                bucket.remaining -= 1
                bucket.inFlight += 1
                if bucket.resetAt == nil { bucket.resetAt = now + bucket.window + configuration.safetyMargin }
            }
            buckets[key] = bucket
            if global { globalInFlight += 1 }
            pruneIfLarge(now: now)
            return Ticket(key: key, route: route, major: major, generation: bucket.generation, discovering: discovering, global: global)
        }
    }

    /// The size of the bucket of `route` for `major` as Discord's headers described it: so many
    /// requests per window. Until the answer to a window's first request has said how long the
    /// window is, one request per the longest `reset-after` heard (at least a second), the window
    /// being at least that long. Nil until an answer has told anything.
    public func size(route: String, major: String) -> (limit: Int, window: Duration)? {
        guard let bucket = buckets[key(route: route, major: major)], let limit = bucket.limit, limit > 0 else { return nil }
        guard bucket.windowLearned else { return (1, max(bucket.longestResetAfter, .seconds(1))) }
        return (limit, bucket.window)
    }

    /// Records what a response said about its bucket. Call exactly once per ticket. `refund`
    /// gives the slot back, for answers that never reached Discord's limiter (a proxy's 502).
    public func complete(_ ticket: Ticket, headers: Headers?, refund: Bool = false) {
        let now = clock.now
        answered(ticket, at: now)
        defer { releaseDiscovery(ticket) }
        if refund, !ticket.discovering, buckets[ticket.key]?.generation == ticket.generation {
            buckets[ticket.key]!.remaining = min(buckets[ticket.key]!.remaining + 1, buckets[ticket.key]!.limit ?? 1)
        }
        guard let headers, let hash = headers.bucket, let limit = headers.limit else { return }
        routeBuckets[ticket.route] = hash
        let key = hash + ":" + ticket.major
        var bucket = buckets[key] ?? Bucket()
        let reported = headers.resetAfter.map { now + $0 + configuration.safetyMargin }
        if bucket.limit == nil {
            bucket.limit = limit
            bucket.remaining = headers.remaining ?? 0
            bucket.resetAt = reported
            bucket.resetConfirmed = reported != nil
        } else if ticket.generation == bucket.generation || ticket.discovering {
            bucket.limit = limit
            bucket.remaining = min(bucket.remaining, headers.remaining ?? bucket.remaining)
            if let reported {
                bucket.resetAt = bucket.resetConfirmed ? max(bucket.resetAt ?? reported, reported) : reported
                bucket.resetConfirmed = true
            }
        }
        if let resetAfter = headers.resetAfter {
            bucket.longestResetAfter = max(bucket.longestResetAfter, resetAfter)
            if headers.remaining == limit - 1 {
                bucket.window = resetAfter
                bucket.windowLearned = true
            }
        }
        buckets[key] = bucket
    }

    /// A 429: blocks the bucket, or everything when `global`, for `retryAfter`.
    public func rateLimited(_ ticket: Ticket, retryAfter: Duration, global: Bool, headers: Headers?) {
        let until = clock.now + retryAfter + configuration.safetyMargin
        if global {
            globalBlockedUntil = max(globalBlockedUntil ?? until, until)
            complete(ticket, headers: nil)
            return
        }
        answered(ticket, at: clock.now)
        if let hash = headers?.bucket { routeBuckets[ticket.route] = hash }
        let key = key(route: ticket.route, major: ticket.major)
        var bucket = buckets[key] ?? Bucket()
        bucket.limit = bucket.limit ?? headers?.limit ?? 1
        bucket.remaining = 0
        bucket.resetAt = max(bucket.resetAt ?? until, until)
        bucket.resetConfirmed = true
        buckets[key] = bucket
        releaseDiscovery(ticket)
    }

    /// The request of `ticket` is no longer in flight: it counts in the global log from now on.
    private func answered(_ ticket: Ticket, at now: C.Instant) {
        if ticket.global {
            globalInFlight -= 1
            globalLog.append(now)
            if globalLog.count > configuration.globalLimit { globalLog.removeFirst(globalLog.count - configuration.globalLimit) }
        }
        if !ticket.discovering, buckets[ticket.key] != nil { buckets[ticket.key]!.inFlight = max(0, buckets[ticket.key]!.inFlight - 1) }
    }

    /// Buckets are kept per major parameter (a channel, an interaction): past `bucketLimit` of
    /// them, those idle and past their reset go, so the map stays bounded however many come.
    static var bucketLimit: Int { 10_000 }

    private func pruneIfLarge(now: C.Instant) {
        guard buckets.count > Self.bucketLimit else { return }
        buckets = buckets.filter { _, bucket in
            bucket.inFlight > 0 || bucket.discovering || (bucket.resetAt.map { $0 > now } ?? false)
        }
    }

    private func releaseDiscovery(_ ticket: Ticket) {
        guard ticket.discovering else { return }
        buckets[ticket.key]?.discovering = false
        if buckets[ticket.key]?.limit == nil { buckets[ticket.key] = nil }
        for waiter in waiters.removeValue(forKey: ticket.key) ?? [] { waiter.resume() }
    }

    /// Requests held back until a bucket's first answer comes: they wait on that answer, not on
    /// the clock (so a test that drives the clock can tell when every request is waiting).
    public var waitingForDiscovery: Int { waiters.values.reduce(0) { $0 + $1.count } }

    private func waitForChange(of key: String) async {
        await withCheckedContinuation { waiters[key, default: []].append($0) }
    }

    /// When the next request may go as far as the global limit is concerned, or nil for now.
    private func globalWait(now: C.Instant) -> C.Instant? {
        if let blocked = globalBlockedUntil, now < blocked { return blocked }
        let expiry = configuration.globalWindow + configuration.safetyMargin
        let recent = globalLog.filter { now < $0 + expiry }
        guard globalInFlight + recent.count >= configuration.globalLimit else { return nil }
        // The oldest recent answer frees a slot; with every slot in flight, look again shortly.
        let excess = globalInFlight + recent.count - configuration.globalLimit
        if excess < recent.count { return recent[excess] + expiry }
        return now + Self.inFlightPoll
    }

    /// How often a request waiting behind a full set of unanswered ones looks again.
    static var inFlightPoll: Duration { .milliseconds(10) }

    private func sleep(until instant: C.Instant, deadline: C.Instant) async throws {
        guard instant <= deadline else {
            throw DiscordError.rateLimited(retryAfter: clock.now.duration(to: instant))
        }
        try await clock.sleep(until: instant, tolerance: nil)
    }
}

extension InstantProtocol where Duration == Swift.Duration {
    static func + (lhs: Self, rhs: Swift.Duration) -> Self { lhs.advanced(by: rhs) }
}
