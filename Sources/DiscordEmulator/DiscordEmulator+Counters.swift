import Synchronization

extension DiscordEmulator {
    /// What the emulator has received and refused, for tests to assert on.
    public struct Counters: Sendable, Codable, Equatable {
        /// Keyed by `"METHOD /route/{template}"`, e.g. `"POST /channels/{channel_id}/messages"`.
        public var requestsByRoute: [String: Int] = [:]
        public var rateLimited = 0
        public var globalRateLimited = 0
        /// The most requests the bot's global limit let through in one of its windows.
        public var busiestGlobalWindow = 0
        /// 401, 403 and 429 answers: what Discord counts toward its invalid-request ban.
        public var invalidRequests = 0
        public var serverErrorsInjected = 0
        public var everyonePings = 0
        public var gatewayConnections = 0
        /// Of those, connections that asked for `compress=zlib-stream`.
        public var compressedGatewayConnections = 0
        /// Of those, connections that asked for `compress=zstd-stream`.
        public var zstdGatewayConnections = 0
        /// Payload bytes sent over the gateway, by the connections' compression (`none`,
        /// `zlib-stream`, `zstd-stream`): what a client's network carries.
        public var gatewayBytesSent: [String: Int] = [:]
        public var identifies = 0
        /// Identifies refused with op 9 for coming faster than `max_concurrency` allows.
        public var identifiesOverConcurrency = 0
        public var resumes = 0
        public var resumesRejected = 0
        /// Sessions a client ended by closing with 1000 or 1001.
        public var sessionsEndedByClient = 0
        public var resumesOffResumeURL = 0
        public var heartbeats = 0
        /// Attachment downloads the CDN served, and those it refused (expired or forged URLs).
        public var cdnDownloads = 0
        public var cdnRefusals = 0
        /// The `Accept-Encoding` of each CDN download ("" when none was sent), in order.
        public var cdnAcceptEncodings: [String] = []
        /// Requests that followed a CDN redirect off the CDN (`redirectCDNDownloads`).
        public var offCDNRequests = 0
        /// Bulk overwrites of the guild's commands (`PUT …/commands`) that were accepted.
        public var commandOverwrites = 0
        /// Commands those overwrites newly created (what Discord's daily limit counts).
        public var commandCreates = 0
        /// Interactions the agent started (commands run, autocomplete asked).
        public var interactionsCreated = 0
        /// Messages posted through incoming webhooks.
        public var webhookExecutions = 0

        public func requests(_ method: String, _ route: String) -> Int {
            requestsByRoute["\(method) \(route)"] ?? 0
        }
    }

    /// One REST request as received, kept so tests can check it against Discord's schema.
    public struct RecordedRequest: Sendable, Codable, Equatable {
        public var method: String
        /// Discord's route template, e.g. `/channels/{channel_id}/messages`.
        public var route: String
        /// The path as sent, e.g. `/api/v10/channels/123/messages`.
        public var path: String
        public var contentType: String?
        /// The JSON body, or a multipart request's `payload_json`.
        public var body: JSON?
        public var fileNames: [String]
        public var status: Int
    }
}

extension DiscordEmulator {
    /// The last sequence number dispatched in each gateway session that has a connection now: a
    /// client has taken in everything sent once it has handled these.
    public var gatewayPositions: [String: Int] {
        world.state.withLock { state in
            var positions: [String: Int] = [:]
            for (id, session) in state.gateway.sessions where session.connectionID != nil && session.sequence > 0 {
                positions[id] = session.sequence
            }
            return positions
        }
    }
}
