import AsyncHTTPClient
import DiscordREST
import HTTPTypes
import Hummingbird
import NIOCore
import ThreadDeskCore
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
        let download = try await attachments.download(id, record: record, range: range) { [quotas] in
            // Signing the URL anew is a Discord call: the address's limit says yes first.
            try await quotas.charge(.refresh, address: address)
        }
        return Self.response(download)
    }

    /// The download with our headers: the type the mirror knows, inline only for images and
    /// video (anything else downloads, so nothing can run on the API's origin), a name that agrees
    /// with that type (an agent's `page.html` sent as text is saved as `page.html.txt`), cacheable
    /// by the app alone (an attachment's bytes never change).
    static func response(_ download: AttachmentProxy.Download) -> Response {
        let attachment = download.attachment
        // Never a page or a script under its own type, whatever an agent posted.
        let type = AttachmentRules.servedType(attachment.contentType)
        let inline = type.hasPrefix("image/") || type.hasPrefix("video/")
        let name = AttachmentRules.filename(AttachmentRules.sanitizedFilename(attachment.filename), agreeingWith: type)
        var headers: HTTPFields = [
            .contentType: type,
            .contentDisposition: AttachmentRules.contentDisposition(inline: inline, filename: name),
            .cacheControl: "private, max-age=86400",
            .acceptRanges: "bytes",
            .xContentTypeOptions: "nosniff",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
        ]
        if let length = download.length { headers[.contentLength] = length }
        let status: HTTPResponse.Status
        switch download.part {
        case .whole:
            status = .ok
        case .range(let range):
            status = .partialContent
            if let range { headers[.contentRange] = range }
        case .unsatisfiable(let range):
            status = .rangeNotSatisfiable
            if let range { headers[.contentRange] = range }
        }
        let body = download.bytes
        return Response(
            status: status, headers: headers,
            body: ResponseBody { writer in
                for try await chunk in body { try await writer.write(chunk) }
                try await writer.finish(nil)
            })
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
