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

    func register(on router: Router<BasicRequestContext>) {
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

/// The safety net: a catch-up through REST every `interval`, whatever the gateway said.
struct CatchUpTimer: Service, CustomStringConvertible {
    let service: SupportService
    let interval: Duration

    var description: String { "CatchUpTimer(every \(interval))" }

    func run() async throws {
        // Only cancellation (graceful shutdown) ends the loop.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await service.catchUp(reason: "timer")
            }
        }
    }
}
