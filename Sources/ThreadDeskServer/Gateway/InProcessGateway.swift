import DiscordGateway
import Logging
import ServiceLifecycle
import Synchronization

/// Why the in-process gateway stopped for good, if it did: `/ready` says so.
final class GatewayHealth: Sendable {
    private let reason = Mutex<String?>(nil)

    var stoppedReason: String? { reason.withLock { $0 } }

    func stopped(_ why: String) { reason.withLock { $0 = why } }
}

/// `serve --gateway`'s gateway connection. When it stops for good (a token Discord refuses, the
/// identify budget spent, intents not allowed) the API keeps serving: messages still go to
/// Discord, reads fall back to REST because the feed is no longer live, and `/ready` reports the
/// gateway down with the reason until the process is fixed and restarted.
struct InProcessGateway: Service {
    let connection: GatewayConnection
    let health: GatewayHealth
    let logger: Logger

    func run() async throws {
        do {
            try await connection.run()
        } catch let error as GatewayFatalError {
            health.stopped(error.description)
            logger.critical(
                "The Discord gateway stopped for good; the API keeps serving and reads Discord over REST until this is fixed and the server restarted",
                metadata: ["reason": "\(error.description)"])
            // Stay in the service group: a returning service would shut the whole server down.
            try? await gracefulShutdown()
        }
    }
}
