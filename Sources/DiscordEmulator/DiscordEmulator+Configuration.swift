extension DiscordEmulator {
    /// A fixed-window limit: `limit` requests per `window`, as Discord's buckets behave.
    public struct WindowLimit: Sendable, Equatable {
        public var limit: Int
        public var window: Duration

        public init(limit: Int, window: Duration) {
            self.limit = limit
            self.window = window
        }
    }

    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port.
        public var port = 0
        /// Posts into one channel (`POST /channels/{id}/messages`), per channel.
        public var messagePostLimit = WindowLimit(limit: 5, window: .seconds(5))
        /// Thread starts in one forum, per forum.
        public var threadCreateLimit = WindowLimit(limit: 10, window: .seconds(10))
        /// Every other route, per route and major parameter.
        public var defaultRouteLimit = WindowLimit(limit: 50, window: .seconds(1))
        /// All requests of one bot token.
        public var globalLimit = WindowLimit(limit: 50, window: .seconds(1))
        /// Largest file Discord accepts in one attachment (10 MiB without boosts).
        public var maxFileSize = 10 * 1024 * 1024
        /// Largest request body read at all; past it the request is refused with 40005.
        public var maxRequestSize = 64 * 1024 * 1024
        public var heartbeatInterval: Duration = .milliseconds(41_250)
        /// Whether the bot's privileged MESSAGE_CONTENT intent is switched on in the developer portal.
        public var messageContentIntentEnabled = true
        /// Events kept per gateway session for RESUME.
        public var resumeBufferSize = 20_000
        public var identifyBudget = 1000
        /// `session_start_limit` refills this long after the window's first identify (Discord: a day).
        public var identifyWindow: Duration = .seconds(86_400)
        /// `session_start_limit.max_concurrency`: identifies allowed per `identifyConcurrencyWindow`
        /// in each bucket (`shard_id % max_concurrency`); one more gets op 9 Invalid Session.
        public var maxConcurrency = 1
        /// Discord: 5 seconds.
        public var identifyConcurrencyWindow: Duration = .seconds(5)
        /// Active (unarchived) threads a guild may hold; one more is refused with 160006.
        public var maxActiveThreads = 1000
        /// A connection that sends nothing is closed after this long, and at once on shutdown.
        public var silentConnectionTimeout: Duration = .seconds(10)
        /// Application commands a guild may newly create per `commandCreateWindow` (Discord: 200 a day).
        public var commandCreateLimit = 200
        public var commandCreateWindow: Duration = .seconds(86_400)
        /// How long after an interaction its callback is accepted (Discord: 3 seconds).
        public var interactionResponseWindow: Duration = .seconds(3)
        /// How long an interaction's token works for follow-ups and edits (Discord: 15 minutes).
        public var interactionTokenLifetime: Duration = .seconds(900)
        /// What the windows above are measured on.
        public var clock = Clock()
        /// Whether the bot is in a second guild too (`Endpoints.secondGuildID`): READY lists it and
        /// a GUILD_CREATE follows for it; its channels are made through `POST /guilds/{id}/channels`.
        public var secondGuild = false
        public var guildName = "ThreadDesk Support"
        public var forumName = "support"
        public var faqForumName = "faq"

        public init() {}

        /// Discord's windows shrunk so that tests of rate limiting take seconds, not minutes.
        public static func fastWindows(scale: Double = 0.1) -> Configuration {
            var configuration = Configuration()
            for keyPath in [\Configuration.messagePostLimit, \.threadCreateLimit, \.defaultRouteLimit, \.globalLimit] {
                configuration[keyPath: keyPath].window = configuration[keyPath: keyPath].window * scale
            }
            configuration.identifyConcurrencyWindow = configuration.identifyConcurrencyWindow * scale
            return configuration
        }
    }
}
