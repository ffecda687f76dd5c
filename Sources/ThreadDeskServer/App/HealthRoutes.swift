import DiscordREST
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ThreadDeskStore
import ThreadDeskWire

/// Liveness, readiness and metrics, for load balancers and Prometheus, and the API's own
/// OpenAPI document.
struct HealthRoutes: Sendable {
    let store: any UserStore
    let metrics: ServerMetrics
    let discord: DiscordClient<AnyClock>
    let gateway: GatewayHealth

    func register(on router: Router<ThreadDeskRequestContext>) {
        router.get("health") { _, _ in try jsonResponse(["status": "ok"]) }
        router.get("ready") { _, context in
            guard !discord.isUnauthorized else {
                throw APIError(
                    .serviceUnavailable, .discordUnauthorized, "Discord refuses the bot token; check DISCORD_TOKEN.", retryAfterSeconds: 60)
            }
            if let reason = gateway.stoppedReason {
                throw APIError(.serviceUnavailable, .gatewayStopped, "The Discord gateway stopped: \(reason)", retryAfterSeconds: 60)
            }
            do {
                try await store.checkReachable()
                return try jsonResponse(["status": "ready"])
            } catch {
                context.logger.warning("Store unreachable", metadata: ["error": "\(error)"])
                throw APIError(.serviceUnavailable, .storeUnreachable, "The store cannot be reached.", retryAfterSeconds: 5)
            }
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
    }

    /// `/metrics`, behind `token` as a bearer token when there is one: on the internal listener when
    /// `INTERNAL_PORT` is set, otherwise on the public one only with a token (it names every app).
    func registerMetrics(on router: Router<ThreadDeskRequestContext>, token: String?) {
        let group = router.group()
        if let token {
            group.add(
                middleware: SecretAuthentication(
                    secret: token, presented: { $0.bearerToken },
                    refusal: APIError(.unauthorized, .unauthorized, "/metrics needs METRICS_TOKEN as a bearer token.")
                ) { _ in .scraper })
        }
        group.get("metrics") { _, _ in
            metrics.discordInvalidRequests.set(to: Double(discord.invalidRequestsLastTenMinutes))
            var buffer: [UInt8] = []
            metrics.registry.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }
}
