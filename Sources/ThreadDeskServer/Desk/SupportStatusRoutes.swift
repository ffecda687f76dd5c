import Foundation
import Hummingbird
import ThreadDeskWire

/// `GET /v1/support-status`: open or away (the hours, or an agent's `/away on`), and when support
/// is next in. From the store and the clock: no Discord call.
struct SupportStatusRoutes: Sendable {
    let away: SupportAvailability

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("support-status", use: status)
    }

    @Sendable func status(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        _ = try context.user()
        let status = try await away.status()
        return try jsonResponse(
            SupportStatus(
                status: status.away ? .away : .open,
                nextOpening: status.nextOpening.map { $0.formatted(.iso8601) }))
    }
}
