import Deadlines
import DiscordREST
import Synchronization
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import ServiceLifecycle

/// The plumbing every REST route shares: faults, auth, rate limits, body parsing, recording.
extension DiscordEmulator {
    enum Bucket: Sendable {
        /// `POST /channels/{id}/messages`: one bucket per channel.
        case messagePost
        /// `POST /channels/{forum}/threads`: one bucket per forum.
        case threadCreate
        /// Everything else: one bucket per route and major parameter.
        case route
    }

    /// Who may call a route.
    enum Auth: Sendable {
        /// The bot's token in `Authorization`.
        case bot
        /// A token in the path (an interaction's or a webhook's) authorises; an `Authorization`
        /// header may come along and changes nothing. Not bound to the bot's global limit.
        case pathToken
    }

    struct RESTCall: Sendable {
        var parameters: [String: String]
        var query: [String: String]
        var body: RESTBody

        func snowflake(_ name: String) throws(DiscordFailure) -> Snowflake {
            guard let value = parameters[name], let id = Snowflake(value) else { throw .notFound }
            return id
        }
    }

    struct RESTReply: Sendable {
        var status: HTTPResponse.Status
        var json: JSON?

        static func ok(_ json: JSON) -> RESTReply { RESTReply(status: .ok, json: json) }
        static let noContent = RESTReply(status: .noContent, json: nil)
    }

    func rest(
        _ router: Router<BasicRequestContext>, _ method: HTTPRequest.Method, _ template: String, bucket: Bucket,
        auth: Auth = .bot, _ handler: @escaping @Sendable (RESTCall) throws(DiscordFailure) -> RESTReply
    ) {
        let routerPath = "/api/v10" + template.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: "")
        let parameterNames = template.split(separator: "/").filter { $0.hasPrefix("{") }.map {
            String($0.dropFirst().dropLast())
        }
        router.on(RouterPath(routerPath), method: method) { [self] request, context -> Response in
            var parameters: [String: String] = [:]
            for name in parameterNames { parameters[name] = context.parameters.get(name) }
            return await self.handleREST(
                request, method: method, template: template, bucket: bucket, auth: auth, parameters: parameters,
                handler: handler)
        }
    }

    private func handleREST(
        _ request: Request, method: HTTPRequest.Method, template: String, bucket: Bucket, auth: Auth,
        parameters: [String: String], handler: @Sendable (RESTCall) throws(DiscordFailure) -> RESTReply
    ) async -> Response {
        let routeKey = "\(method.rawValue) \(template)"
        let contentType = request.headers[.contentType]
        let answerLost = world.state.withLock { state in
            guard let left = state.faults.lostAnswers[routeKey], left > 0 else { return false }
            state.faults.lostAnswers[routeKey] = left - 1
            return true
        }
        let routeError = world.state.withLock { state -> Int? in
            guard let error = state.faults.routeErrors[routeKey], error.count > 0 else { return nil }
            if error.after > 0 {
                state.faults.routeErrors[routeKey] = (error.count, error.status, error.after - 1)
                return nil
            }
            state.faults.routeErrors[routeKey] = (error.count - 1, error.status, 0)
            return error.status
        }
        defer { world.observers.changed() }
        let faults = world.state.withLock { state in
            state.counters.requestsByRoute[routeKey, default: 0] += 1
            if state.faults.serverErrors > 0 && state.faults.serverErrorsAfter > 0 {
                // Let this one through; the errors start later.
                state.faults.serverErrorsAfter -= 1
                var passing = state.faults
                passing.serverErrors = 0
                return passing
            }
            defer {
                if state.faults.serverErrors > 0 {
                    state.faults.serverErrors -= 1
                } else if state.faults.edge429s > 0 {
                    state.faults.edge429s -= 1
                }
            }
            return state.faults
        }
        world.observers.changed()  // counted on arrival
        if faults.held.contains(routeKey) {
            // Held until the test releases it; the emulator's own shutdown is not held up.
            try? await cancelWhenGracefulShutdown {
                try await self.world.observers.wait(for: "the release of a held \(routeKey)", timeout: .seconds(600)) {
                    !self.world.state.withLock { $0.faults.held.contains(routeKey) }
                }
            }
        }
        // A slow Discord, but not one that holds the emulator's own shutdown.
        if faults.latency > .zero { try? await cancelWhenGracefulShutdown { try await Task.sleep(for: faults.latency) } }
        var record = RecordedRequest(
            method: method.rawValue, route: template, path: request.uri.path, contentType: contentType, body: nil, fileNames: [], status: 0)
        defer {
            let finished = record
            world.state.withLock { state in
                state.requestLog.append(finished)
                if state.requestLog.count > 5_000 { state.requestLog.removeFirst(1_000) }
            }
        }
        if faults.serverErrors > 0 || routeError != nil {
            let status = routeError ?? faults.serverErrorStatus
            world.state.withLock { $0.counters.serverErrorsInjected += 1 }
            record.status = status
            // A refusal (4xx) reads as Discord words its own (the JSON error codes of its docs).
            let refusal: (code: Int, message: String)? =
                switch status {
                case 400: (50035, "Invalid Form Body")
                case 403: (50013, "Missing Permissions")
                case 404: (10003, "Unknown Channel")
                case 413: (40005, "Request entity too large")
                default: nil
                }
            return Self.response(
                status: .init(code: status),
                json: ["message": .string(refusal?.message ?? "Internal Server Error (injected)"), "code": .integer(Int64(refusal?.code ?? 0))],
                headers: [:])
        }
        if faults.edge429s > 0 {
            world.state.withLock { $0.counters.rateLimited += 1 }
            record.status = 429
            return Response(
                status: .tooManyRequests, headers: [.contentType: "text/html", .retryAfter: faults.edge429RetryAfter],
                body: .init(byteBuffer: ByteBuffer(string: "<html><body>Error 1015: You are being rate limited.</body></html>")))
        }
        guard auth == .pathToken || request.headers[.authorization] == "Bot \(world.token)" else {
            world.state.withLock { $0.counters.invalidRequests += 1 }
            record.status = 401
            return Self.response(DiscordFailure.unauthorized, headers: [:])
        }
        let limit = rateLimit(template: template, bucket: bucket, global: auth == .bot, parameters: parameters)
        if let refusal = limit.refusal {
            record.status = 429
            return refusal
        }
        let reply: RESTReply
        do {
            let data: Data
            do {
                data = Data(buffer: try await request.body.collect(upTo: configuration.maxRequestSize))
            } catch {
                throw DiscordFailure.requestTooLarge
            }
            let body = try RESTBody(data: data, contentType: contentType)
            record.body = body.json
            record.fileNames = body.files.compactMap(\.filename)
            let query = Dictionary(
                request.uri.queryParameters.map { (String($0.key), String($0.value)) }, uniquingKeysWith: { $1 })
            reply = try handler(RESTCall(parameters: parameters, query: query, body: body))
        } catch let failure as DiscordFailure {
            if failure.status == 401 || failure.status == 403 { world.state.withLock { $0.counters.invalidRequests += 1 } }
            record.status = failure.status
            return Self.response(failure, headers: limit.headers)
        } catch {
            record.status = 500
            return Self.response(status: .internalServerError, json: ["message": "500: Internal Server Error", "code": 0], headers: limit.headers)
        }
        if answerLost {
            // Done, and the answer never arrives: what the caller sees is the edge giving up.
            record.status = 504
            return Response(
                status: .gatewayTimeout, headers: [.contentType: "text/html"],
                body: .init(byteBuffer: ByteBuffer(string: "<html><body>504 Gateway Time-out</body></html>")))
        }
        record.status = Int(reply.status.code)
        var headers = limit.headers
        if let override = faults.resetAfterOverride { headers[.rateLimitResetAfter] = override }
        return Self.response(status: reply.status, json: reply.json, headers: headers)
    }

    private struct LimitOutcome {
        var headers: HTTPFields
        var refusal: Response?
    }

    private func rateLimit(template: String, bucket: Bucket, global: Bool, parameters: [String: String]) -> LimitOutcome {
        let major = parameters["channel_id"] ?? parameters["guild_id"] ?? parameters["webhook_id"] ?? parameters["interaction_id"] ?? ""
        let (limit, name): (WindowLimit, String) =
            switch bucket {
            case .messagePost: (configuration.messagePostLimit, "message-post")
            case .threadCreate: (configuration.threadCreateLimit, "thread-create")
            case .route: (configuration.defaultRouteLimit, template)
            }
        let hash = Self.bucketHash(name)
        let now = configuration.clock.now
        let checksGlobal = global
        let (global, local) = world.state.withLock { state in
            let global =
                checksGlobal
                ? state.rateLimits.take("global", limit: configuration.globalLimit, now: now)
                : RateLimitTable.Decision.allowed(remaining: configuration.globalLimit.limit, resetAfter: .zero)
            if case .limited = global {
                state.counters.rateLimited += 1
                state.counters.globalRateLimited += 1
                state.counters.invalidRequests += 1
                return (global, RateLimitTable.Decision.allowed(remaining: 0, resetAfter: .zero))
            }
            if case .allowed(let remaining, _) = global {
                state.counters.busiestGlobalWindow = max(state.counters.busiestGlobalWindow, configuration.globalLimit.limit - remaining)
            }
            let local = state.rateLimits.take(hash + ":" + major, limit: limit, now: now)
            if case .limited = local {
                state.counters.rateLimited += 1
                state.counters.invalidRequests += 1
            }
            return (global, local)
        }
        func seconds(_ duration: Duration) -> String { String(format: "%.3f", max(0, duration.seconds)) }
        if case .limited(let retryAfter) = global {
            let headers: HTTPFields = [
                .retryAfter: String(Int(retryAfter.seconds.rounded(.up))),
                .rateLimitGlobal: "true", .rateLimitScope: "global",
            ]
            let body: JSON = [
                "message": "You are being rate limited.", "retry_after": .number(max(0.001, retryAfter.seconds)),
                "global": true, "code": 0,
            ]
            return LimitOutcome(headers: headers, refusal: Self.response(status: .tooManyRequests, json: body, headers: headers))
        }
        let (remaining, resetAfter, retryAfter): (Int, Duration, Duration?) =
            switch local {
            case .allowed(let remaining, let resetAfter): (remaining, resetAfter, nil)
            case .limited(let retryAfter): (0, retryAfter, retryAfter)
            }
        var headers: HTTPFields = [
            .rateLimitLimit: String(limit.limit),
            .rateLimitRemaining: String(remaining),
            .rateLimitReset: String(format: "%.3f", Date().timeIntervalSince1970 + resetAfter.seconds),
            .rateLimitResetAfter: seconds(resetAfter),
            .rateLimitBucket: hash,
        ]
        guard let retryAfter else { return LimitOutcome(headers: headers, refusal: nil) }
        headers[.rateLimitScope] = "user"
        headers[.retryAfter] = String(Int(retryAfter.seconds.rounded(.up)))
        let body: JSON = [
            "message": "You are being rate limited.", "retry_after": .number(max(0.001, retryAfter.seconds)),
            "global": false, "code": 0,
        ]
        return LimitOutcome(headers: headers, refusal: Self.response(status: .tooManyRequests, json: body, headers: headers))
    }

    /// Stable opaque ids, shaped like Discord's 32-hex-digit bucket hashes.
    static func bucketHash(_ name: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in name.utf8 {
            first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x100_0000_01b3 &+ 0x9e37
        }
        return String(format: "%016llx%016llx", first, second)
    }

    static func response(_ failure: DiscordFailure, headers: HTTPFields) -> Response {
        response(status: .init(code: failure.status), json: failure.json, headers: headers)
    }

    static func response(status: HTTPResponse.Status, json: JSON?, headers: HTTPFields) -> Response {
        var headers = headers
        guard let json else { return Response(status: status, headers: headers) }
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: json.encoded())))
    }
}

extension HTTPField.Name {
    static let rateLimitLimit = Self("X-RateLimit-Limit")!
    static let rateLimitRemaining = Self("X-RateLimit-Remaining")!
    static let rateLimitReset = Self("X-RateLimit-Reset")!
    static let rateLimitResetAfter = Self("X-RateLimit-Reset-After")!
    static let rateLimitBucket = Self("X-RateLimit-Bucket")!
    static let rateLimitScope = Self("X-RateLimit-Scope")!
    static let rateLimitGlobal = Self("X-RateLimit-Global")!
}
