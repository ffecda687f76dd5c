import Deadlines
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOSSL
import Synchronization

public enum APNsEnvironment: String, Sendable, Hashable {
    case production
    case development

    public var url: String {
        switch self {
        case .production: "https://api.push.apple.com"
        case .development: "https://api.sandbox.push.apple.com"
        }
    }
}

/// Why a notification was not delivered.
public enum APNsError: Error, Sendable, CustomStringConvertible {
    /// Apple refused it; `timestamp` (ms since 1970) comes with Unregistered.
    case rejected(status: Int, reason: APNsReason, timestamp: Int64?)
    /// Connection failures, 429 or 5xx until the budget ran out.
    case unavailable(attempts: Int, lastProblem: String)

    public var description: String {
        switch self {
        case .rejected(let status, let reason, _): "APNs refused the notification: \(status) \(reason)"
        case .unavailable(let attempts, let problem): "APNs unavailable after \(attempts) attempts: \(problem)"
        }
    }

    public var reason: APNsReason? {
        if case .rejected(_, let reason, _) = self { return reason }
        return nil
    }
}

/// Sends notifications over one long-lived HTTP/2 connection per APNs host, token-authenticated.
public final class APNsClient<C: Clock>: Sendable where C.Duration == Duration {
    public struct Configuration: Sendable {
        public var topic: String
        /// Overrides both environments' hosts (the emulator); nil for Apple's.
        public var baseURL: String?
        /// Extra trust root in PEM, for the emulator's certificate.
        public var additionalTrustRootPEM: String?
        public var budget: Duration = .seconds(10)
        public var attemptTimeout: Duration = .seconds(5)
        public var backoffBase: Duration = .milliseconds(100)
        public var backoffCap: Duration = .seconds(2)

        public init(topic: String, baseURL: String? = nil, additionalTrustRootPEM: String? = nil) {
            self.topic = topic
            self.baseURL = baseURL
            self.additionalTrustRootPEM = additionalTrustRootPEM
        }
    }

    public struct Delivery: Sendable, Hashable {
        public var apnsID: String?
    }

    public let configuration: Configuration
    let tokens: APNsTokenManager<C>
    private let tls: NIOSSLContext
    /// One connection per APNs host (production, development, or the emulator's).
    private let connections = Mutex<[String: APNsConnection]>([:])
    private let clock: C
    private let logger: Logger

    public init(configuration: Configuration, tokens: APNsTokenManager<C>, clock: C, logger: Logger) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let pem = configuration.additionalTrustRootPEM {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
        }
        self.tls = try NIOSSLContext(configuration: tls)
        self.configuration = configuration
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
    }

    /// Closes the connections; the owner calls it when it is done sending (sends after it fail).
    public func shutdown() async {
        let open = connections.withLock { connections in
            defer { connections = [:] }
            return Array(connections.values)
        }
        for connection in open { await connection.shutdown() }
    }

    deinit {
        // The fallback for an owner that never called `shutdown()`: close without waiting (the
        // last reference may go on an event loop, which must not block).
        for connection in connections.withLock({ Array($0.values) }) { connection.close() }
    }

    /// The connection to the host of `base` (`https://host[:port]`).
    private func connection(to base: String) throws(APNsError) -> APNsConnection {
        guard let url = URL(string: base), let host = url.host else {
            throw .unavailable(attempts: 0, lastProblem: "not an APNs URL: \(base)")
        }
        let port = url.port ?? 443
        return connections.withLock { connections in
            if let existing = connections[base] { return existing }
            let connection = APNsConnection(host: host, port: port, tls: tls)
            connections[base] = connection
            return connection
        }
    }

    /// Sends `notification` to one device; retries 429, 5xx and lost connections inside the budget,
    /// and renews the provider token once when Apple says it expired.
    @discardableResult
    public func send(_ notification: APNsNotification, to deviceToken: String, environment: APNsEnvironment) async throws(APNsError)
        -> Delivery
    {
        do {
            return try await WaitTracker.track("APNs send") { try await attempts(notification, to: deviceToken, environment: environment) }
        } catch let error as APNsError {
            throw error
        } catch {
            throw .unavailable(attempts: 0, lastProblem: "\(error)")
        }
    }

    /// Attempts until delivered, refused for good, or the budget — cut to the caller's
    /// `Deadline` — runs out; every wait inside, the answer's body included, ends by then.
    private func attempts(_ notification: APNsNotification, to deviceToken: String, environment: APNsEnvironment) async throws(APNsError)
        -> Delivery
    {
        let deadline = clock.now.advanced(by: Deadline.capping(configuration.budget))
        let payload = ByteBuffer(data: notification.payload())
        let connection = try connection(to: configuration.baseURL ?? environment.url)
        var attempt = 0
        var renewed = false
        var lastProblem = "no attempt"
        while true {
            attempt += 1
            let token: String
            do {
                token = try await tokens.token()
            } catch {
                throw .unavailable(attempts: attempt, lastProblem: "cannot sign the provider token: \(error)")
            }
            var headers: [(String, String)] = [
                ("authorization", "bearer \(token)"), ("apns-topic", notification.topic ?? configuration.topic),
                ("apns-push-type", notification.pushType.rawValue), ("apns-priority", String(notification.priority)),
            ]
            if let expiration = notification.expiration {
                headers.append(("apns-expiration", String(Int(expiration.timeIntervalSince1970))))
            }
            if let collapseID = notification.collapseID { headers.append(("apns-collapse-id", collapseID)) }
            if let id = notification.id { headers.append(("apns-id", id.uuidString.lowercased())) }
            headers.append(("content-type", "application/json"))

            let status: Int
            let body: ByteBuffer
            do {
                let timeout = min(configuration.attemptTimeout, clock.now.duration(to: deadline))
                guard timeout > .zero else { throw DeadlineExceeded("APNs send", after: configuration.budget) }
                let answer = try await connection.send(
                    path: "/3/device/\(deviceToken)", headers: headers, body: payload, timeout: TimeAmount(timeout))
                // Apple answers a delivery with no body.
                if answer.status == 200 { return Delivery(apnsID: answer.apnsID) }
                status = answer.status
                body = answer.body
            } catch {
                lastProblem = "\(error)"
                try await backOff(attempt: attempt, deadline: deadline, lastProblem: lastProblem)
                continue
            }
            let answer = try? JSONDecoder().decode(ErrorBody.self, from: Data(buffer: body))
            let reason = APNsReason(rawValue: answer?.reason ?? "HTTP \(status)")
            switch (status, reason) {
            case (403, .expiredProviderToken) where !renewed:
                renewed = true
                _ = try? await tokens.renew(rejected: token)
                logger.notice("APNs provider token expired; renewed")
            case (429, _), (500..<600, _):
                lastProblem = "\(status) \(reason)"
                logger.warning("APNs busy", metadata: ["status": "\(status)", "reason": "\(reason)"])
                try await backOff(attempt: attempt, deadline: deadline, lastProblem: lastProblem)
            default:
                throw .rejected(status: status, reason: reason, timestamp: answer?.timestamp)
            }
        }
    }

    private struct ErrorBody: Decodable {
        var reason: String
        var timestamp: Int64?
    }

    private func backOff(attempt: Int, deadline: C.Instant, lastProblem: String) async throws(APNsError) {
        let ceiling = min(configuration.backoffCap, configuration.backoffBase * (1 << min(attempt - 1, 16)))
        let delay = ceiling * Double.random(in: 0.5...1.0)
        guard clock.now.advanced(by: delay) < deadline else { throw .unavailable(attempts: attempt, lastProblem: lastProblem) }
        do {
            try await clock.sleep(for: delay)
        } catch {
            throw .unavailable(attempts: attempt, lastProblem: "cancelled")
        }
    }
}

extension APNsClient where C == ContinuousClock {
    public convenience init(
        configuration: Configuration, keyID: String, teamID: String, privateKeyPEM: String, logger: Logger
    ) throws {
        let tokens = try APNsTokenManager(keyID: keyID, teamID: teamID, privateKeyPEM: privateKeyPEM, clock: ContinuousClock())
        try self.init(configuration: configuration, tokens: tokens, clock: ContinuousClock(), logger: logger)
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
