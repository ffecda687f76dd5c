import DiscordREST
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/me`: the user erases their data, or takes a copy of it.
struct PrivacyRoutes: Sendable {
    let eraser: UserEraser
    let exporter: DataExporter
    let metrics: ServerMetrics

    func register(on groups: V1Groups) {
        // A copied token alone must not erase or export the conversation: an attested device signs.
        groups.signed(groups.users(charging: { .update($0) })).delete("me", use: erase)
        groups.signed(groups.users(charging: { .read($0) })).get("me/export", use: export)
    }

    /// 204 once everything is gone. A retry with the same token gets 401: the token went with the
    /// rest (the API documents 401 as the answer a client that lost the first answer gets).
    @Sendable func erase(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await eraser.erase(try context.user().id, reason: .request)
        return Response(status: .noContent)
    }

    @Sendable func export(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let query = request.uri.queryParameters
        var after: Snowflake?
        if let raw = query["after"], !raw.isEmpty {
            guard let id = Snowflake(String(raw)), id.rawValue <= UInt64(Int64.max) else { throw APIError.badRequest(.invalidAfter, "after must be a message id (digits).") }
            after = id
        }
        var limit = DataExporter.defaultPage
        if let raw = query["limit"] {
            guard let value = Int(raw), (1...DataExporter.maximumPage).contains(value) else {
                throw APIError.badRequest(.invalidLimit, "limit must be a whole number from 1 to \(DataExporter.maximumPage).")
            }
            limit = value
        }
        let page = try await exporter.page(for: record, after: after, limit: limit)
        metrics.exportPage()
        return try jsonResponse(page)
    }
}
