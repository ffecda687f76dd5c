import DiscordREST
import HTTPTypes
import Hummingbird
import ThreadDeskStore
import ThreadDeskWire

extension V1Routes {
    /// `GET /v1/attachments/{id}`: the bytes of an attachment of the user's own conversation.
    @Sendable func attachment(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let address = service.quotas.clientAddress(request, context)
        guard let raw = context.parameters.get("id"), let id = Snowflake(raw) else {
            throw APIError(.notFound, .attachmentNotFound, "No attachment with this id in your conversation.")
        }
        let range = request.headers[.range].flatMap { $0.count <= 100 && $0.hasPrefix("bytes=") ? $0 : nil }
        return try await service.attachments.response(for: id, record: record, range: range) { [service] in
            // Signing the URL anew is a Discord call: the address's limit says yes first.
            try await service.quotas.charge(.refresh, address: address)
        }
    }
}
