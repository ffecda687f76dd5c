import Crypto
import Deadlines
import Foundation
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// A fake APNs: HTTP/2 over TLS (ALPN h2) on loopback, checking what Apple checks — the ES256
/// provider token, path, headers, priority against push type, payload size — answering with
/// Apple's reasons, playing scripted outcomes per device token, and recording every delivery.
public final class APNsEmulator: Service, Sendable {
    public let configuration: Configuration
    /// The team's .p8 key, kept as bytes because the key type is not Sendable.
    private let teamKeyBytes: Data
    let pki: TestPKI
    let logger: Logger
    let state = Mutex(State())
    /// Woken as requests come (`waitUntil`).
    let observers = ChangeSignal()
    private let bound = Mutex<(port: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    struct State {
        var deliveries: [Delivery] = []
        var scripts: [String: [Outcome]] = [:]
        var permanent: [String: Outcome] = [:]
        var counters = Counters()
        /// Provider tokens whose signature checked out, with their `iat`: as Apple does, a token
        /// is verified once and then only its age is checked (a provider reuses one for up to an hour).
        var verifiedTokens: [Substring: Double] = [:]
    }

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "apns-emulator")) throws {
        self.configuration = configuration
        self.teamKeyBytes = P256.Signing.PrivateKey().rawRepresentation
        self.pki = try TestPKI()
        self.logger = logger
    }

    var teamKey: P256.Signing.PrivateKey {
        // Bytes we produced ourselves from a valid key.
        try! P256.Signing.PrivateKey(rawRepresentation: teamKeyBytes)
    }

    public func run() async throws {
        do {
            try await serve()
        } catch {
            // A server that never listened must not leave `credentials()` waiting forever.
            let waiters = bound.withLock { bound in
                defer { bound.waiters = [] }
                return bound.port == nil ? bound.waiters : []
            }
            for waiter in waiters { waiter.resume(returning: 0) }
            throw error
        }
    }

    private func serve() async throws {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(pki.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(pki.serverKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let emulator = self
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    emulator.state.withLock { $0.counters.connections += 1 }
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(APNsStreamHandler(emulator: emulator))
                        }
                    }
                }
            }
        let channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        let port = channel.localAddress?.port ?? 0
        let waiters = bound.withLock { bound in
            bound.port = port
            defer { bound.waiters = [] }
            return bound.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
        logger.info("APNs emulator listening", metadata: ["port": "\(port)"])
        try? await gracefulShutdown()
        try await channel.close()
    }

    /// Where it listens and which credentials it accepts; waits until it is listening.
    public func credentials() async -> Credentials {
        let port = await withCheckedContinuation { continuation in
            let known = bound.withLock { bound -> Int? in
                if let port = bound.port { return port }
                bound.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
        return Credentials(
            url: "https://127.0.0.1:\(port)", topic: configuration.topic, keyID: configuration.keyID, teamID: configuration.teamID,
            privateKeyPEM: teamKey.pemRepresentation, caCertificatePEM: pki.caCertificatePEM)
    }

    /// Runs an emulator for the duration of `body`.
    public static func withRunning<T: Sendable>(
        configuration: Configuration = .init(), logger: Logger = Logger(label: "apns-emulator"),
        _ body: @Sendable (APNsEmulator) async throws -> T
    ) async throws -> T {
        let emulator = try APNsEmulator(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            _ = await emulator.credentials()
            do {
                let result = try await body(emulator)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }

    // MARK: Control

    /// Returns once `condition` holds for the emulator (its deliveries, its counters), checked as
    /// requests come; throws `DeadlineExceeded` past `timeout`. No polling.
    public func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
        _ condition: (APNsEmulator) -> Bool
    ) async throws {
        try await observers.wait(for: what, timeout: timeout) { condition(self) }
    }

    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    public var counters: Counters { state.withLock { $0.counters } }

    public func deliveries(to deviceToken: String) -> [Delivery] {
        state.withLock { $0.deliveries.filter { $0.deviceToken == deviceToken.lowercased() } }
    }

    /// The next requests for `deviceToken` get these outcomes, in order; then normal delivery.
    public func script(_ deviceToken: String, _ outcomes: [Outcome]) {
        state.withLock { $0.scripts[deviceToken.lowercased(), default: []].append(contentsOf: outcomes) }
    }

    /// Every request for `deviceToken` gets this outcome until cleared with nil.
    public func setPermanentOutcome(_ outcome: Outcome?, for deviceToken: String) {
        state.withLock { $0.permanent[deviceToken.lowercased()] = outcome }
    }

    public func reset() {
        state.withLock { $0 = State() }
    }
}
