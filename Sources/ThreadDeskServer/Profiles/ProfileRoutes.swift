import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `PUT /v1/attributes` and `POST /v1/activity`: what the app says about its user. Charged as
/// updates of the user and writes of their device or address (`QUOTA_CONTEXT_*`); a refused body keeps nothing.
struct ProfileRoutes: Sendable {
    let profiles: ProfileService

    /// 50 keys of 40 characters and values of 256 characters of up to 4 scalars each (4 bytes a
    /// scalar, more when JSON escapes them): about 205 KB at most, with room.
    static let attributesLimit = 512 * 1024
    /// 10 properties of that size, and the name.
    static let activityLimit = 128 * 1024

    func register(on groups: V1Groups) {
        let updates = groups.users(charging: { .context($0) })
        updates.put("attributes", use: setAttributes)
        updates.post("activity", use: record)
    }

    @Sendable func setAttributes(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let update = try await request.decode(AttributesUpdate.self, limit: Self.attributesLimit, invalid: ["attributes": .invalidAttributes])
        do {
            return try jsonResponse(try await profiles.setAttributes(update.attributes, for: user))
        } catch let violation as ProfileRules.Violation {
            throw APIError.badRequest(.invalidAttributes, violation.description + ".")
        }
    }

    @Sendable func record(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let fields: [String: ErrorCode] = ["id": .invalidActivity, "name": .invalidActivity, "properties": .invalidActivity, "occurredAt": .invalidActivity]
        let event = try await request.decode(ActivityEvent.self, limit: Self.activityLimit, invalid: fields)
        do {
            let (kept, created) = try await profiles.record(event, for: user)
            return try jsonResponse(kept, status: created ? .created : .ok)
        } catch let violation as ProfileRules.Violation {
            throw APIError.badRequest(.invalidActivity, violation.description + ".")
        }
    }
}
