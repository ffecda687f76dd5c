import HTTPTypes
import Hummingbird
import ThreadDeskStore
import ThreadDeskWire

/// Charges a send with files to its user's and address's upload budget from its declared size,
/// before a byte of it is read or a large-upload slot taken: a body cut off halfway (a trickle
/// past the request deadline) has paid for what it claimed, so renewing it is not free. A body
/// that declares no size is refused (411): it could not be charged first.
struct UploadBudget: RouterMiddleware {
    let quotas: Quotas
    /// Bodies past this are refused unread (413) by the reader: they are not charged.
    let limit: Int

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard request.method == .post, request.headers[.contentType]?.lowercased().hasPrefix("multipart/") == true else {
            return try await next(request, context)
        }
        guard let declared = request.headers[.contentLength].flatMap(Int.init) else {
            throw APIError(.lengthRequired, .lengthRequired, "Send files with a Content-Length header.")
        }
        guard declared <= limit else { return try await next(request, context) }
        let cost = Quotas.Cost.upload(try context.user().id, bytes: declared)
        let address = quotas.clientAddress(request, context)
        try await quotas.charge(cost, address: address)
        do {
            return try await next(request, context)
        } catch let error as APIError where error.code == .busy || error.code == .uploadInProgress {
            // Turned away before its body was kept: the retry must not pay twice.
            try? await quotas.refund(cost, address: address)
            throw error
        }
    }
}
