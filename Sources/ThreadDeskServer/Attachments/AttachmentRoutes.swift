import DiscordREST
import HTTPTypes
import Hummingbird
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/attachments/{id}`: files of the user's conversation, through ThreadDesk's own URL.
struct AttachmentRoutes: Sendable {
    let attachments: AttachmentProxy
    let quotas: Quotas

    func register(on groups: V1Groups) {
        groups.users(charging: { .read($0) }).get("attachments/:id", use: attachment)
    }

    /// `GET /v1/attachments/{id}`: the bytes of an attachment of the user's own conversation.
    @Sendable func attachment(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let address = quotas.clientAddress(request, context)
        guard let raw = context.parameters.get("id"), let id = Snowflake(raw) else {
            throw SupportFailure.attachmentNotFound(gone: false)
        }
        let range = request.headers[.range].flatMap { $0.count <= 100 && $0.hasPrefix("bytes=") ? $0 : nil }
        return try await attachments.response(for: id, record: record, range: range) { [quotas] in
            // Signing the URL anew is a Discord call: the address's limit says yes first.
            try await quotas.charge(.refresh, address: address)
        }
    }
}
