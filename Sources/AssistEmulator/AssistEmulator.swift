import Deadlines
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A fake OpenAI-compatible chat-completions provider on loopback, for tests and the sandbox:
/// deterministic answers, scripted faults (429, 5xx, malformed bodies, cut streams, requests
/// held until released) and a record of every request, so a test can see what reached the model.
public final class AssistEmulator: Service, Sendable {
    /// Everything a client needs to reach this emulator, printed by the `assist-emulator` executable.
    public struct Endpoints: Sendable, Codable, Equatable {
        /// The root holding `/chat/completions` and `/models`, as `ASSIST_URL` takes it.
        public var baseURL: String
        public var controlURL: String
        /// The first model it serves.
        public var model: String
        public var apiKey: String?
    }

    public let configuration: Configuration
    let logger: Logger
    let state = Mutex(State())
    /// Woken whenever a request is recorded, held or answered (`waitUntil`).
    let observers = ChangeSignal()
    private let port = Mutex<(value: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    public init(configuration: Configuration = .init(), logger: Logger = Logger(label: "assist-emulator")) {
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        let router = Router(context: BasicRequestContext.self)
        addProviderRoutes(to: router)
        addControlRoutes(to: router)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { [self] channel in
                let port = channel.localAddress?.port ?? 0
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
            // The group that runs the emulator decides when it stops (the sandbox stops it after
            // the server that talks to it). Held requests end when that shutdown begins.
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
            baseURL: base + "/v1", controlURL: base + "/_emulator", model: configuration.models.first ?? "",
            apiKey: configuration.apiKey)
    }

    /// Runs an emulator for the duration of `body`, then shuts it down.
    public static func withRunning<T: Sendable>(
        configuration: Configuration = .init(),
        logger: Logger = Logger(label: "assist-emulator"),
        _ body: @Sendable (AssistEmulator) async throws -> T
    ) async throws -> T {
        let emulator = AssistEmulator(configuration: configuration, logger: logger)
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
}
