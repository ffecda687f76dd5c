import Foundation
import Hummingbird
import ThreadDeskStore
import ThreadDeskWire

/// `GET /v1/support-status`: open or away (the hours, or an agent's `/away on`), and when support
/// is next in. From the store and the clock: no Discord call.
struct SupportStatusRoutes: Sendable {
    let away: SupportAvailability

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("support-status", use: status)
    }

    @Sendable func status(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        guard let app = away.catalog.app(of: try context.user().id) else { throw APIError.unauthorized }
        let status = try await away.status(of: app)
        return try jsonResponse(
            SupportStatus(
                status: status.away ? .away : .open,
                nextOpening: status.nextOpening.map { $0.formatted(.iso8601) }))
    }
}
