import DiscordGateway
import Foundation
import HTTPTypes
import Hummingbird
import ServiceLifecycle
import ThreadDeskCore

/// Routes for the gateway daemon, behind `GATEWAY_SECRET` (absent without it).
struct InternalRoutes: Sendable {
    let service: SupportService
    let secret: String

    static let batchLimit = 16 * 1024 * 1024

    struct Batch: Codable, Sendable {
        var events: [ForumEvent]
    }

    func register(on router: Router<ThreadDeskRequestContext>) {
        router.post("internal/gateway/events") { request, _ in
            guard let token = request.bearerToken, constantTimeEquals(token, secret) else {
                throw APIError(.unauthorized, "invalid_gateway_secret", "The gateway secret is missing or wrong.")
            }
            let batch = try await request.decode(Batch.self, limit: Self.batchLimit)
            await service.deliver(batch.events)
            return try jsonResponse(["handled": batch.events.count])
        }
    }
}
