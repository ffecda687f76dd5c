/// The live conversation: event streams, typing and read receipts.
public struct LiveSettings: Sendable {
    /// A keep-alive comment goes down every idle stream this often (proxies close silent connections).
    public var keepAlive: Duration = .seconds(20)
    /// A stream whose write has not finished for this long belongs to a client that stopped
    /// reading: it is closed and what it held is freed (the client reconnects and resumes).
    public var writeTimeout: Duration = .seconds(30)
    /// A stream ends (cleanly) after about this long and the client resumes with `Last-Event-ID`:
    /// connections spread over replicas again after a deploy or scale-out, and proxies with a
    /// response time limit never cut one mid-event. Each stream gets up to 10 % less, so they do
    /// not all reconnect at once.
    public var maxStreamDuration: Duration = .seconds(3600)
    /// Open streams this process accepts in all; more are answered 503.
    public var maxStreams = 20_000
    /// Streams being opened at once in this process (the quota, the token's check against the
    /// stream, the first read of the store; the bearer token itself is checked before): up to
    /// `openingQueue` more wait their turn in arrival order, up to `openingWait`, and the rest are
    /// answered 503 `busy` at once (`LIVE_OPENING_AT_ONCE`). Nil (the default): no turns. Measured
    /// at 34,000 streams over two replicas, turns of 64 and of 1,000 opened more slowly than none
    /// and sent thousands of openings back to retry (`bench/RESULTS.md`), once the first-use
    /// write left the opening's path: they bound the burst's memory only.
    public var openingAtOnce: Int?
    /// Openings that may wait for a turn in this process; past them, 503 `busy` at once
    /// (`LIVE_OPENING_QUEUE`).
    public var openingQueue = 2_000
    /// How long an opening waits for its turn before it is answered 503 (and retried after
    /// `Retry-After`): half the request deadline at most, the other half is for the opening itself.
    public var openingWait: Duration = .seconds(10)
    /// Runs first in each stream opening's turn: tests hold a turn with it. Nil outside tests.
    var inTurn: (@Sendable () async -> Void)?
    /// Open streams one user may hold; a further one closes their oldest.
    public var streamsPerUser = 8
    /// Open streams one client address (an IPv4 address or an IPv6 /64) may hold; more are
    /// answered 429, so one address cannot take the process's whole `maxStreams`
    /// (`LIVE_STREAMS_PER_ADDRESS`; a carrier's NAT puts many users behind one address).
    public var streamsPerAddress = 500
    /// At most one typing indicator per thread is sent to Discord this often, however often the
    /// app reports typing (Discord shows one for about 10 s).
    public var typingInterval: Duration = .seconds(8)
    /// How long an agent's `typing` event holds (Discord's TYPING_START lasts about 10 s).
    public var typingExpiry: Duration = .seconds(10)
    /// The reaction that shows an agent what the user has read; nil: none.
    public var readReceiptEmoji: String? = "👀"
    /// Read receipts are moved in Discord at most this often per user.
    public var readReceiptDelay: Duration = .seconds(3)

    public init() {}
}
