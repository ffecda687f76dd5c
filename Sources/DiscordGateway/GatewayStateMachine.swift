import DiscordREST

/// The gateway protocol (v10, JSON) as a pure state machine: every input returns what to do
/// next, so it is tested without a network and with no clock but the durations it returns.
public struct GatewayStateMachine: Sendable {
    /// GUILDS, GUILD_MESSAGES, GUILD_MESSAGE_TYPING and MESSAGE_CONTENT.
    public static let supportIntents = 1 | 1 << 9 | 1 << 11 | 1 << 15

    public struct Session: Sendable, Equatable {
        public var id: String
        public var resumeURL: String
        public var sequence: Int?

        public init(id: String, resumeURL: String, sequence: Int?) {
            self.id = id
            self.resumeURL = resumeURL
            self.sequence = sequence
        }
    }

    /// Where and how to connect next.
    public struct Connect: Sendable, Equatable {
        public var url: String
        public var resume: Bool
        public var after: Duration

        public init(url: String, resume: Bool, after: Duration) {
            self.url = url
            self.resume = resume
            self.after = after
        }
    }

    public enum Action: Sendable, Equatable {
        case send(JSON)
        /// Heartbeat after `first` (the interval times a random jitter), then every `interval`.
        case startHeartbeats(first: Duration, interval: Duration)
        case dispatch(type: String, data: JSON)
        /// A new session (not a resumed one) started: whatever happened while none was open may be missing.
        case gap
        /// Close the connection with a non-1000 code (so the session stays resumable) and connect as told.
        case close(code: UInt16, then: Connect)
        /// Stop for good: retrying cannot help.
        case fatal(String)
    }

    public let token: String
    public let intents: Int
    public let gatewayURL: String
    public private(set) var session: Session?
    public private(set) var identifiesRemaining: Int
    /// The last sequence number seen, sent with heartbeats and RESUME.
    private var lastSequence: Int?
    private var awaitingAck = false
    private var failedConnects = 0
    private let backoffBase: Duration
    private let backoffCap: Duration
    /// The shortest time between two identifies: Discord allows `max_concurrency` per 5 seconds
    /// per bucket, and this client runs one shard (one bucket).
    private let identifySpacing: Duration
    /// Whether an identify was sent: every later one waits `identifySpacing` after its
    /// connection closed (which is after the identify), so two never come closer.
    private var identified = false
    private let random: @Sendable () -> Double

    /// - Parameters:
    ///   - identifyBudget: `session_start_limit.remaining` from `GET /gateway/bot`.
    ///   - random: a number in 0..<1 (jitter); injected so tests are repeatable.
    public init(
        token: String, intents: Int = supportIntents, gatewayURL: String, identifyBudget: Int,
        backoffBase: Duration = .seconds(1), backoffCap: Duration = .seconds(60), identifySpacing: Duration = .seconds(5),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.identifySpacing = identifySpacing
        self.token = token
        self.intents = intents
        self.gatewayURL = gatewayURL
        self.identifiesRemaining = identifyBudget
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.random = random
    }

    /// Whether the next connection would have to identify with no budget left: the budget must be
    /// read again from `GET /gateway/bot` (and waited for) first.
    public var needsIdentifyBudget: Bool { session == nil && identifiesRemaining <= 0 }

    /// The budget as `GET /gateway/bot` reports it now.
    public mutating func refillIdentifies(_ remaining: Int) {
        identifiesRemaining = max(0, remaining)
    }

    /// The first connection.
    public var firstConnect: Connect { Connect(url: gatewayURL, resume: false, after: .zero) }

    /// A payload from Discord.
    public mutating func received(_ payload: JSON) -> [Action] {
        if let sequence = payload["s"]?.intValue { session?.sequence = sequence; lastSequence = sequence }
        switch payload["op"]?.intValue {
        case 10:
            // Discord sends about 41 s; anything outside 0.1 s–10 min (or not a number) is not trusted
            // (a negative interval would beat as fast as the loop runs; a huge one never).
            let milliseconds = min(600_000, max(100, payload["d"]?["heartbeat_interval"]?.intValue ?? 41_250))
            let interval = Duration.milliseconds(milliseconds)
            awaitingAck = false
            var actions: [Action] = [.startHeartbeats(first: interval * random(), interval: interval)]
            if let session {
                actions.append(.send(["op": 6, "d": ["token": .string(token), "session_id": .string(session.id), "seq": JSON(session.sequence)]]))
            } else {
                // Never identify beyond the budget: close, and the connection's owner waits for it to
                // refill (`needsIdentifyBudget`) before connecting again.
                guard identifiesRemaining > 0 else { return [.close(code: 4900, then: identifyConnect(after: .zero))] }
                identifiesRemaining -= 1
                identified = true
                actions.append(.send([
                    "op": 2,
                    "d": [
                        "token": .string(token), "intents": JSON(intents),
                        "properties": ["os": "linux", "browser": "threaddesk", "device": "threaddesk"],
                    ],
                ]))
            }
            return actions
        case 11:
            awaitingAck = false
            return []
        case 1:
            return [heartbeat()]
        case 7:
            return [.close(code: 4900, then: resumeOrIdentify(after: .zero))]
        case 9:
            if payload["d"]?.boolValue == true, session != nil {
                return [.close(code: 4900, then: resumeOrIdentify(after: .zero))]
            }
            session = nil
            lastSequence = nil
            // Discord asks for a pause of 1–5 seconds before identifying again.
            return [.close(code: 4900, then: identifyConnect(after: .milliseconds(Int64(1000 + 4000 * random()))))]
        case 0:
            let type = payload["t"]?.stringValue ?? ""
            let data = payload["d"] ?? .null
            var actions: [Action] = [.dispatch(type: type, data: data)]
            if type == "READY" {
                session = Session(
                    id: data["session_id"]?.stringValue ?? "", resumeURL: data["resume_gateway_url"]?.stringValue ?? gatewayURL,
                    sequence: lastSequence)
                failedConnects = 0
                actions.append(.gap)
            } else if type == "RESUMED" {
                failedConnects = 0
            }
            return actions
        default:
            return []
        }
    }

    /// The heartbeat timer fired.
    public mutating func heartbeatDue() -> [Action] {
        if awaitingAck {
            // No ACK since the last beat: a zombie connection. Drop it and resume.
            return [.close(code: 4901, then: resumeOrIdentify(after: .zero))]
        }
        return [heartbeat()]
    }

    public enum AfterClose: Sendable, Equatable {
        case reconnect(Connect)
        case fatal(String)
    }

    /// The connection ended without us asking (`code` nil when it simply dropped).
    public mutating func connectionClosed(code: UInt16?) -> AfterClose {
        switch code {
        case 4004: return .fatal("Discord refused the bot token (4004): check DISCORD_TOKEN.")
        case 4010: return .fatal("Invalid shard (4010).")
        case 4011: return .fatal("Sharding required (4011): this bot is in too many guilds for one connection.")
        case 4012: return .fatal("Invalid gateway API version (4012).")
        case 4013: return .fatal("Invalid intents (4013).")
        case 4014: return .fatal("Disallowed intents (4014): enable the Message Content intent for the bot in the Developer Portal.")
        case 4007, 4009:
            session = nil
            lastSequence = nil
        default:
            break
        }
        failedConnects += 1
        let ceiling = min(backoffCap, backoffBase * (1 << min(failedConnects - 1, 16)))
        return .reconnect(resumeOrIdentify(after: ceiling * (0.5 + 0.5 * random())))
    }

    private mutating func heartbeat() -> Action {
        awaitingAck = true
        return .send(["op": 1, "d": JSON(lastSequence)])
    }

    private func resumeOrIdentify(after delay: Duration) -> Connect {
        if let session { return Connect(url: session.resumeURL, resume: true, after: delay) }
        return identifyConnect(after: delay)
    }

    /// A connection that will identify: never sooner than `identifySpacing` after the last one.
    private func identifyConnect(after delay: Duration) -> Connect {
        Connect(url: gatewayURL, resume: false, after: identified ? max(delay, identifySpacing) : delay)
    }
}

extension JSON {
    init(_ value: Int?) { self = value.map { .number(Double($0)) } ?? .null }
}
