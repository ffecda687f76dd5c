import AsyncHTTPClient
import Deadlines
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// Discord REST v10 over AsyncHTTPClient, inside Discord's rate limits, retrying what is safe
/// to retry until the call's time budget runs out.
public final class DiscordClient<C: Clock>: Sendable where C.Duration == Duration {
    public struct Configuration: Sendable {
        public var baseURL: String
        public var token: String
        public var userAgent = "DiscordBot (https://github.com/threaddesk/threaddesk, 0.1.0)"
        /// How long one call may take in all, waits and retries included.
        public var budget: Duration = .seconds(15)
        /// Timeout of a single HTTP attempt.
        public var attemptTimeout: Duration = .seconds(10)
        public var backoffBase: Duration = .milliseconds(250)
        public var backoffCap: Duration = .seconds(4)
        public var rateLimits = DiscordRateLimiter<C>.Configuration()
        /// After Discord refuses the token (401), how often one call is let through to see whether
        /// it is accepted again; every other call fails at once without being sent.
        public var unauthorizedProbeInterval: Duration = .seconds(60)
        /// Discord bans an IP after 10,000 invalid requests (401, 403, 429) in 10 minutes; past
        /// this many in the last 10 minutes, calls stop until the count falls again.
        public var invalidRequestCeiling = 2_500
        /// After Discord answers 403 to a route on a channel (or guild), the same calls on it fail
        /// at once with that answer, unsent, for this long: a permission that is missing stays
        /// missing until someone fixes it, and every refusal counts toward the ban. (Per route, so a
        /// thread that refuses reactions still takes posts.)
        public var forbiddenPause: Duration = .seconds(300)
        /// Turns kept where the bot's other processes (replicas) see them too, for the routes whose
        /// bucket they all spend and a burst would overrun (making forum threads). Nil: this
        /// process is the bot's only one.
        public var sharedTurns: (any DiscordSharedTurns)?
        /// How much later than its shared turn a request may reach Discord (a busy process, a slow
        /// network) with the replicas together still inside the bucket: each window of turns
        /// stops giving them this long before Discord's closes, and the next opens this long after.
        public var sharedTurnLateness: Duration = .milliseconds(250)
        /// Told of every HTTP attempt: its route template and status (nil when no answer came), for metrics.
        public var observer: (@Sendable (_ route: String, _ status: Int?) -> Void)?

        public init(baseURL: String = "https://discord.com/api/v10", token: String) {
            self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
            self.token = token
        }
    }

    public let configuration: Configuration
    public let rateLimiter: DiscordRateLimiter<C>
    let httpClient: HTTPClient
    let clock: C
    let logger: Logger
    /// Open (with when it last let a probe through) while Discord refuses the token.
    private let unauthorized = Mutex<(opened: Bool, lastProbe: C.Instant?)>((false, nil))
    /// Routes on channels (and guilds) that answered 403: the answer, and until when it stands.
    private let forbidden = Mutex<[String: (error: DiscordAPIError, until: C.Instant)]>([:])
    /// When the invalid answers of the last 10 minutes came, oldest first.
    private let invalidAnswers = Mutex<[C.Instant]>([])
    static var invalidRequestWindow: Duration { .seconds(600) }

    /// Invalid requests (401, 403, 429) in the last 10 minutes, as Discord counts toward its ban.
    public var invalidRequestsLastTenMinutes: Int {
        let now = clock.now
        return invalidAnswers.withLock { answers in
            answers.removeAll { $0 + Self.invalidRequestWindow <= now }
            return answers.count
        }
    }

    /// Whether Discord refused the bot token on the latest answer: nothing is being sent.
    public var isUnauthorized: Bool { unauthorized.withLock { $0.opened } }

    public init(configuration: Configuration, clock: C, httpClient: HTTPClient = .shared, logger: Logger) {
        self.configuration = configuration
        self.clock = clock
        self.httpClient = httpClient
        self.logger = logger
        self.rateLimiter = DiscordRateLimiter(clock: clock, configuration: configuration.rateLimits)
    }

    /// One REST call: its route template (for buckets and logs), concrete path and body.
    struct Request: Sendable {
        enum Body: Sendable {
            case none
            case json(Data)
            case multipart(payload: Data, files: [DiscordFile])
        }

        var method: HTTPMethod
        var template: String
        var path: String
        var major: String
        var query: [(String, String)] = []
        var body: Body = .none
        /// Whether a server error or dropped connection may be retried without risk of a duplicate.
        var retriesServerErrors: Bool
        /// False for routes a token in the path authorises (interaction answers, webhooks): no
        /// bot token is sent, and their 401 says nothing about it.
        var usesBotToken = true

        /// Whether the request takes a turn from `Configuration.sharedTurns` first.
        var sharedBucket = false

        /// Discord leaves interaction answers and follow-ups out of the bot's global limit.
        var countsGlobally: Bool { !(template.hasPrefix("/interactions/") || template.hasPrefix("/webhooks/{application_id}/")) }

        var route: String { "\(method.rawValue) \(template)" }
    }

    func send<T: Decodable>(_ request: Request, as type: T.Type) async throws(DiscordError) -> T {
        let data = try await send(request)
        do {
            return try Self.decoder.decode(T.self, from: data)
        } catch {
            throw .invalidResponse("\(request.route): \(error)")
        }
    }

    @discardableResult
    func send(_ request: Request) async throws(DiscordError) -> Data {
        do {
            return try await WaitTracker.track("Discord \(request.route)") { try await attempts(request) }
        } catch let error as DiscordError {
            throw error
        } catch {
            throw .unavailable(attempts: 0, lastProblem: "\(error)")
        }
    }

    /// Attempts `request` until it succeeds, fails for good, or the budget — cut to the caller's
    /// `Deadline` — runs out. Every wait inside, the answer's body included, ends by then.
    private func attempts(_ request: Request) async throws(DiscordError) -> Data {
        if request.usesBotToken {
            try passUnauthorizedCircuit(request)
            // A token route's 403 (a webhook post into a locked thread) says nothing about others.
            try passForbiddenPause(request)
        }
        try stayUnderTheBanThreshold()
        let deadline = clock.now + Deadline.capping(configuration.budget)
        var attempt = 0
        var lastProblem = "no attempt"
        while true {
            attempt += 1
            var turn: C.Instant?
            if request.sharedBucket, let turns = configuration.sharedTurns {
                // Before this process's own limiter, so a wait for a turn holds none of its slots.
                turn = try await takeSharedTurn(request, from: turns, deadline: deadline)
            }
            let ticket: DiscordRateLimiter<C>.Ticket
            do {
                ticket = try await rateLimiter.acquire(route: request.route, major: request.major, deadline: deadline, global: request.countsGlobally)
            } catch let error as DiscordError {
                throw error
            } catch {
                throw .unavailable(attempts: attempt - 1, lastProblem: "cancelled")
            }
            // This process's own limiter held the request (its share of the global limit, a 429's
            // wait): past half the lateness a turn allows, the request might land in Discord's next
            // window, so the turn is let go (unused, it costs the others nothing) and a new one taken.
            if let turn, turn.duration(to: clock.now) > configuration.sharedTurnLateness / 2 {
                await rateLimiter.complete(ticket, headers: nil, refund: true)
                attempt -= 1
                continue
            }
            let response: HTTPClientResponse
            let body: ByteBuffer
            do {
                let timeout = min(configuration.attemptTimeout, clock.now.duration(to: deadline))
                guard timeout > .zero else { throw DeadlineExceeded("Discord \(request.route)", after: configuration.budget) }
                let started = ContinuousClock.now
                response = try await httpClient.execute(try makeHTTPRequest(request), timeout: .nanoseconds(timeout.nanoseconds))
                // The client's timeout stops at the response head; the body gets what is left
                // (nothing, when a busy machine let the head arrive after the attempt's time).
                let answer = response
                let left = timeout - started.duration(to: .now)
                guard left > .zero else { throw DeadlineExceeded("Discord's answer to \(request.route)", after: timeout) }
                body = try await withTimeout(left, "the body of Discord's answer to \(request.route)") {
                    try await answer.body.collect(upTo: 16 * 1024 * 1024)
                }
            } catch {
                await rateLimiter.complete(ticket, headers: nil)
                configuration.observer?(request.route, nil)
                lastProblem = "\(error)"
                logger.warning("Discord request failed", metadata: ["route": "\(request.route)", "error": "\(error)"])
                try await backOff(attempt: attempt, deadline: deadline, lastProblem: lastProblem, allowed: request.retriesServerErrors)
                continue
            }
            let headers = Self.rateLimitHeaders(response.headers)
            let status = Int(response.status.code)
            configuration.observer?(request.route, status)
            recordAuthorization(status: status, botToken: request.usesBotToken)
            switch status {
            case 200..<300:
                await rateLimiter.complete(ticket, headers: headers)
                return Data(buffer: body)
            case 429:
                let json = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any]
                let stated = Self.duration(seconds: json?["retry_after"] as? Double)
                    ?? Self.duration(seconds: response.headers.first(name: "retry-after").flatMap(Double.init))
                var retryAfter = stated ?? .seconds(1)
                var global = (json?["global"] as? Bool) ?? (response.headers.first(name: "x-ratelimit-global") == "true")
                if json == nil {
                    // Not Discord's own answer (Cloudflare's ban page is HTML): everything waits, long.
                    global = true
                    retryAfter = max(retryAfter, Self.unexplained429Backoff)
                }
                logger.warning(
                    "Discord rate limited a request",
                    metadata: ["route": "\(request.route)", "retryAfter": "\(retryAfter)", "global": "\(global)"])
                await rateLimiter.rateLimited(ticket, retryAfter: retryAfter, global: global, headers: headers)
                lastProblem = "429"
            case 500..<600:
                await rateLimiter.complete(ticket, headers: headers, refund: headers == nil)
                lastProblem = "HTTP \(status)"
                try await backOff(attempt: attempt, deadline: deadline, lastProblem: lastProblem, allowed: request.retriesServerErrors)
            default:
                await rateLimiter.complete(ticket, headers: headers)
                let error = Self.apiError(status: status, body: Data(buffer: body))
                if status == 403, request.usesBotToken { pause(request, after: error) }
                throw .api(error)
            }
        }
    }

    /// Waits for this process's turn on the request's bucket among all the bot's processes,
    /// counted in Discord's own windows (`DiscordSharedTurns`): the whole limit at once when a
    /// window opens, the next window `sharedTurnLateness` after Discord's has closed, turns given
    /// only while a request made `sharedTurnLateness` later still lands in the window. So under a
    /// backlog the replicas together reach `window / (window + lateness)` of Discord's pace, and no
    /// window gets more than the limit while no request reaches Discord later than
    /// `sharedTurnLateness` after its turn. While this process has not heard the bucket's size yet,
    /// one a second (each process's first call spends the bucket too); see
    /// `DiscordRateLimiter.size`. Turns that cannot be had (the store is down) leave it to this
    /// process's own count.
    /// Returns when this process asked for the turn it was given (nil when no turn was needed or
    /// none could be had): the request should reach Discord within `sharedTurnLateness` of it.
    private func takeSharedTurn(_ request: Request, from turns: any DiscordSharedTurns, deadline: C.Instant) async throws(DiscordError) -> C.Instant? {
        while true {
            let size = await rateLimiter.size(route: request.route, major: request.major) ?? (limit: 1, window: .seconds(1))
            // A bucket of a second or more that allows more than Discord's global limit for the
            // whole bot (50 a second, which the replicas' shares add up to) cannot be overrun by
            // them together: no turn needed.
            if size.window >= .seconds(1), size.window / size.limit < .milliseconds(20) { return nil }
            let asked = clock.now
            let wait: Duration?
            do {
                wait = try await turns.take(
                    "\(request.route) \(request.major)", limit: size.limit, window: size.window, lateness: configuration.sharedTurnLateness)
            } catch {
                logger.notice("Could not take a shared turn for a Discord call", metadata: ["route": "\(request.route)", "error": "\(error)"])
                return nil
            }
            guard let wait else { return asked }
            guard clock.now.advanced(by: wait) <= deadline else { throw .rateLimited(retryAfter: wait) }
            do {
                try await clock.sleep(for: wait, tolerance: nil)
            } catch {
                throw .unavailable(attempts: 0, lastProblem: "cancelled")
            }
        }
    }

    /// A refused token refuses every request, and each refusal counts toward Discord's ban on
    /// invalid requests: while the token is refused, only one probe per interval is sent.
    private func passUnauthorizedCircuit(_ request: Request) throws(DiscordError) {
        let now = clock.now
        let blocked = unauthorized.withLock { state -> Bool in
            guard state.opened else { return false }
            if let last = state.lastProbe, now < last + configuration.unauthorizedProbeInterval { return true }
            state.lastProbe = now
            return false
        }
        if blocked {
            throw .api(DiscordAPIError(
                status: 401, code: .general, message: "401: Unauthorized (not sent: Discord refuses the bot token)", errors: nil))
        }
    }

    /// Refuses, unsent, a call on a channel that answered 403 within `forbiddenPause`.
    private func passForbiddenPause(_ request: Request) throws(DiscordError) {
        guard !request.major.isEmpty else { return }
        let now = clock.now
        let key = request.route + " " + request.major
        let standing = forbidden.withLock { paused -> DiscordAPIError? in
            guard let entry = paused[key] else { return nil }
            if now < entry.until { return entry.error }
            paused[key] = nil
            return nil
        }
        if let standing {
            throw .api(DiscordAPIError(
                status: standing.status, code: standing.code, message: "\(standing.message) (not sent: this channel answered 403 recently)",
                errors: nil))
        }
    }

    private func pause(_ request: Request, after error: DiscordAPIError) {
        guard !request.major.isEmpty else { return }
        let until = clock.now + configuration.forbiddenPause
        let count = forbidden.withLock { paused in
            paused[request.route + " " + request.major] = (error, until)
            // A bounded map: entries whose pause has passed go when it grows.
            if paused.count > 1_000 {
                let now = clock.now
                paused = paused.filter { $0.value.until > now }
            }
            return paused.count
        }
        logger.warning(
            "Discord refuses the bot on a channel (403); calls on it pause",
            metadata: [
                "route": "\(request.route)", "channel": "\(request.major)", "code": "\(error.code.rawValue)",
                "pause": "\(configuration.forbiddenPause)", "pausedChannels": "\(count)",
            ])
    }

    private func stayUnderTheBanThreshold() throws(DiscordError) {
        guard invalidRequestsLastTenMinutes >= configuration.invalidRequestCeiling else { return }
        let oldest = invalidAnswers.withLock { $0.first } ?? clock.now
        throw .rateLimited(retryAfter: clock.now.duration(to: oldest + Self.invalidRequestWindow))
    }

    private func recordAuthorization(status: Int, botToken: Bool) {
        let now = clock.now
        if [401, 403, 429].contains(status) {
            invalidAnswers.withLock { answers in
                answers.append(now)
                if answers.count > configuration.invalidRequestCeiling { answers.removeFirst(answers.count - configuration.invalidRequestCeiling) }
            }
        }
        let change = unauthorized.withLock { state -> Bool? in
            guard botToken else { return nil }
            if status == 401, !state.opened {
                state = (true, now)
                return true
            }
            if (200..<300).contains(status), state.opened {
                state = (false, nil)
                return false
            }
            return nil
        }
        switch change {
        case true?:
            logger.critical(
                "Discord refuses the bot token (401): all Discord calls stop, one probe every \(configuration.unauthorizedProbeInterval). Check DISCORD_TOKEN.")
        case false?:
            logger.notice("Discord accepts the bot token again; calls resume")
        case nil:
            break
        }
    }

    /// Sleeps a jittered exponential backoff, or gives up when it would overrun the budget.
    private func backOff(attempt: Int, deadline: C.Instant, lastProblem: String, allowed: Bool) async throws(DiscordError) {
        guard allowed else { throw .unavailable(attempts: attempt, lastProblem: lastProblem) }
        let ceiling = min(configuration.backoffCap, configuration.backoffBase * (1 << min(attempt - 1, 16)))
        let delay = ceiling * Double.random(in: 0.5...1.0)
        guard clock.now + delay < deadline else { throw .unavailable(attempts: attempt, lastProblem: lastProblem) }
        do {
            try await clock.sleep(for: delay)
        } catch {
            throw .unavailable(attempts: attempt, lastProblem: "cancelled")
        }
    }

    private func makeHTTPRequest(_ request: Request) throws -> HTTPClientRequest {
        var components = URLComponents(string: configuration.baseURL + request.path)
        if !request.query.isEmpty { components?.queryItems = request.query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        var http = HTTPClientRequest(url: components?.string ?? configuration.baseURL + request.path)
        http.method = request.method
        if request.usesBotToken { http.headers.add(name: "Authorization", value: "Bot \(configuration.token)") }
        http.headers.add(name: "User-Agent", value: configuration.userAgent)
        switch request.body {
        case .none:
            break
        case .json(let data):
            http.headers.add(name: "Content-Type", value: "application/json")
            http.body = .bytes(ByteBuffer(data: data))
        case .multipart(let payload, let files):
            let form = MultipartEncoder(payloadJSON: payload, files: files)
            http.headers.add(name: "Content-Type", value: form.contentType)
            http.body = .stream(BufferSequence(chunks: form.chunks), length: .known(Int64(form.length)))
        }
        return http
    }

    static func rateLimitHeaders(_ headers: HTTPHeaders) -> DiscordRateLimiter<C>.Headers? {
        guard let bucket = headers.first(name: "x-ratelimit-bucket") else { return nil }
        return .init(
            bucket: bucket,
            limit: headers.first(name: "x-ratelimit-limit").flatMap(Int.init),
            remaining: headers.first(name: "x-ratelimit-remaining").flatMap(Int.init),
            resetAfter: duration(seconds: headers.first(name: "x-ratelimit-reset-after").flatMap(Double.init)))
    }

    /// How long every request waits after a 429 that is not Discord's JSON.
    static var unexplained429Backoff: Duration { .seconds(60) }
    /// No wait Discord asks for is taken as longer than this.
    static var longestWait: Duration { .seconds(3600) }

    /// A wait in seconds as Discord states it, or nil when it is not a usable number (negative,
    /// `inf`, `nan`); huge values are cut to `longestWait`.
    static func duration(seconds value: Double?) -> Duration? {
        guard let value, value.isFinite, value >= 0 else { return nil }
        return .milliseconds(Int64((min(value, longestWait / .seconds(1)) * 1000).rounded(.up)))
    }

    static func apiError(status: Int, body: Data) -> DiscordAPIError {
        let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        let errors = (json?["errors"]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        return DiscordAPIError(
            status: status, code: DiscordErrorCode(rawValue: json?["code"] as? Int ?? 0),
            message: json?["message"] as? String ?? "HTTP \(status)",
            errors: errors.map { String(decoding: $0, as: UTF8.self) })
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension DiscordClient where C == ContinuousClock {
    public convenience init(configuration: Configuration, httpClient: HTTPClient = .shared, logger: Logger) {
        self.init(configuration: configuration, clock: ContinuousClock(), httpClient: httpClient, logger: logger)
    }
}

extension DiscordClient where C == AnyClock {
    /// A client on a clock chosen at run time (the server's: continuous, or a test's manual one).
    public convenience init(
        configuration: Configuration, on clock: any Clock<Duration> = ContinuousClock(), httpClient: HTTPClient = .shared, logger: Logger
    ) {
        self.init(configuration: configuration, clock: AnyClock(clock), httpClient: httpClient, logger: logger)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

extension DiscordClient.Configuration: CustomReflectable {
    public var customMirror: Mirror { Mirror(self, children: ["baseURL": baseURL, "token": "<redacted>", "budget": budget]) }
}
