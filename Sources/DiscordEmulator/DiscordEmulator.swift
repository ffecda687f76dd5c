import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A fake Discord — REST v10, gateway v10 and a control API — on one loopback port, for tests
/// and the sandbox. It keeps Discord's semantics (ids, errors, rate limits, gateway sessions) so
/// that what passes here behaves the same against discord.com.
public final class DiscordEmulator: Service, Sendable {
    /// Everything a client needs to reach this emulator, printed by the `discord-emulator` executable.
    public struct Endpoints: Sendable, Codable, Equatable {
        public var restURL: String
        public var gatewayURL: String
        public var controlURL: String
        public var botToken: String
        public var botUserID: String
        public var applicationID: String
        public var guildID: String
        /// A second guild the bot is in, without channels until one is made in it.
        public var secondGuildID: String
        public var forumChannelID: String
        public var agentUserID: String
        /// A second forum whose posts are curated answers.
        public var faqChannelID: String
    }

    public let configuration: Configuration
    let world: DiscordWorld
    let logger: Logger
    private let port = Mutex<(value: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "discord-emulator")) {
        self.configuration = configuration
        self.world = DiscordWorld(configuration: configuration)
        self.logger = logger
    }

    public func run() async throws {
        let router = Router(context: BasicRequestContext.self)
        addRESTRoutes(to: router)
        addInteractionRoutes(to: router)
        addWebhookRoutes(to: router)
        addControlRoutes(to: router)
        addInteractionControlRoutes(to: router)
        addMemberControlRoutes(to: router)
        let world = self.world
        let application = Application(
            router: router,
            server: .guardedWebSocketUpgrade(silentTimeout: configuration.silentConnectionTimeout) { request, channel, _ in
                let path = request.path ?? ""
                let route = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
                guard route == "/gateway" || route == "/gateway-resume" else { return .dontUpgrade }
                let version = Self.queryValue("v", in: path)
                let compress = Self.queryValue("compress", in: path)
                return .upgrade([:]) { inbound, outbound, _ in
                    try await Self.serveGateway(
                        world: world, channel: channel, inbound: inbound, outbound: outbound,
                        onResumeURL: route == "/gateway-resume", version: version, compress: compress)
                }
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { [self] channel in
                let port = channel.localAddress?.port ?? 0
                self.world.baseURL = "http://\(self.configuration.host):\(port)"
                let waiters = self.port.withLock { state in
                    state.value = port
                    defer { state.waiters = [] }
                    return state.waiters
                }
                waiters.forEach { $0.resume(returning: port) }
            },
            logger: logger
        )
        do {
            // The group that runs the emulator decides when it stops: catching SIGTERM here too
            // would end it while the server that talks to it still drains (the sandbox).
            try await application.runService(gracefulShutdownSignals: [])
        } catch {
            // A server that never listened must not leave `endpoints()` waiting forever.
            let waiters = port.withLock { state in
                defer { state.waiters = [] }
                return state.value == nil ? state.waiters : []
            }
            waiters.forEach { $0.resume(returning: 0) }
            throw error
        }
    }

    /// Waits until the server listens, then tells where (port 0 if it failed to start).
    public func endpoints() async -> Endpoints {
        let port = await withCheckedContinuation { continuation in
            let known = self.port.withLock { state -> Int? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
        let base = "http://\(configuration.host):\(port)"
        return Endpoints(
            restURL: base + "/api/v10", gatewayURL: base.replacingOccurrences(of: "http://", with: "ws://") + "/gateway",
            controlURL: base + "/_emulator", botToken: world.token, botUserID: world.bot.id.description,
            applicationID: world.applicationID.description, guildID: world.guildID.description,
            secondGuildID: world.secondGuildID.description,
            forumChannelID: world.forumID.description, agentUserID: world.agent.id.description,
            faqChannelID: world.faqForumID.description
        )
    }

    /// Runs an emulator for the duration of `body`, then shuts it down.
    public static func withRunning<T: Sendable>(
        configuration: Configuration = .init(),
        logger: Logger = Logger(label: "discord-emulator"),
        _ body: @Sendable (DiscordEmulator) async throws -> T
    ) async throws -> T {
        let emulator = DiscordEmulator(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            _ = await emulator.endpoints()
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

    static func queryValue(_ name: String, in path: String) -> String? {
        URLComponents(string: path)?.queryItems?.first { $0.name == name }?.value
    }
}
