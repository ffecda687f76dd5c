import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/diagnostics`: a JSON document from the app, into the thread as a file and a summary.
struct DiagnosticsRoutes: Sendable {
    let diagnostics: DiagnosticsService
    let quotas: Quotas

    static let limit = 8 * 1024 * 1024

    func register(on groups: V1Groups) {
        // Each upload costs Discord calls: an attested device signs it.
        groups.asserting(
            groups.users(charging: { .diagnostics($0) }), limit: Self.limit, gate: (diagnostics.largeBodies, Request.largeBody)
        ) { _, _ in true }
            .post("diagnostics", use: upload)
    }

    @Sendable func upload(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let key = request.headers[.idempotencyKey]
        if let key, !IdempotencyKey.isValid(key) {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        let (bytes, document, slot) = try await request.jsonObject(
            limit: Self.limit, gate: diagnostics.largeBodies, for: quotas.largeBodyHolder(user, request, context),
            admitted: context.holdsLargeUploadSlot)
        // Held until the upload is done: the document stays in memory until then.
        defer { slot?.leave() }
        let result = try await diagnostics.upload(
            bytes, document: document, idempotencyKey: key, for: user, from: quotas.clientAddress(request, context))
        return try jsonResponse(result, status: .created)
    }
}
