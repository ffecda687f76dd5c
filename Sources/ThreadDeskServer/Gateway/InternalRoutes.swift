import DiscordGateway
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle
import ThreadDeskCore
import ThreadDeskWire

/// Routes for the gateway daemon, behind `GATEWAY_SECRET` (absent without it).
struct InternalRoutes: Sendable {
    let events: GatewayEventHandler
    let secret: String
    let metrics: ServerMetrics
    let logger: Logger

    static let batchLimit = 16 * 1024 * 1024

    func register(on router: Router<ThreadDeskRequestContext>) {
        router.group().add(middleware: SecretAuthentication.daemon(secret: secret)).post("internal/gateway/events") { request, _ in
            let batch = try await request.decode(ForumEventBatch.self, limit: Self.batchLimit)
            if batch.skipped > 0 {
                // A newer daemon: what this server cannot read is skipped, never refused (a 400
                // would make the daemon retry the batch forever).
                metrics.mirror.gatewayEventsSkipped.increment(by: Int64(batch.skipped))
                logger.notice(
                    "Skipped gateway events this server does not understand", metadata: ["count": "\(batch.skipped)", "version": "\(batch.version)"])
            }
            await events.deliver(batch.events)
            return try jsonResponse(["handled": batch.events.count, "skipped": batch.skipped])
        }
    }
}
