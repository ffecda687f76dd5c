/// Any clock measured in `Duration`, as one concrete type: what a generic that needs a `Clock`
/// type (`DiscordClient<C>`) takes when the clock is chosen at run time (the continuous clock in a
/// running server, a test's manual clock). Its instants count from when it was made.
public struct AnyClock: Clock, Sendable {
    public struct Instant: InstantProtocol {
        /// Time since the clock was made.
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    /// The clock this one reads.
    public let base: any Clock<Duration>
    private let elapsed: @Sendable () -> Duration
    private let sleepFor: @Sendable (Duration, Duration?) async throws -> Void
    public let minimumResolution: Duration

    public init(_ clock: any Clock<Duration>) {
        if let erased = clock as? AnyClock {
            self = erased
        } else {
            self.init(opening: clock)
        }
    }

    private init<C: Clock>(opening clock: C) where C.Duration == Duration {
        let origin = clock.now
        base = clock
        minimumResolution = clock.minimumResolution
        elapsed = { origin.duration(to: clock.now) }
        sleepFor = { duration, tolerance in try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: tolerance) }
    }

    public var now: Instant { Instant(offset: elapsed()) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleepFor(now.duration(to: deadline), tolerance)
    }
}
