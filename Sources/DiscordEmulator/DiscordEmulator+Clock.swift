extension DiscordEmulator {
    /// The time the emulator's windows run on (rate limits, `max_concurrency`, the identify
    /// budget): real time unless a test hands it the clock its client runs on, so that a window
    /// passes when the test says so, however busy the machine is.
    public struct Clock: Sendable {
        private let elapsed: @Sendable () -> Duration

        /// Time read from `clock`, counted from now.
        public init<C: _Concurrency.Clock>(_ clock: C) where C.Duration == Duration {
            let start = clock.now
            elapsed = { start.duration(to: clock.now) }
        }

        /// Real time.
        public init() { self.init(ContinuousClock()) }

        /// How long since the clock was made: the emulator's "now".
        public var now: Duration { elapsed() }
    }
}
