import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/crashes`: one MetricKit diagnostic payload from the app, into the thread as notes.
struct CrashRoutes: Sendable {
    let crashes: CrashService
    let quotas: Quotas
    /// Large payloads read and parsed a few at a time (the uploads' gate).
    let largeBodies: ConcurrencyGate

    /// Apple's payloads are kilobytes; 2 MiB holds the largest with room.
    static let limit = 2 * 1024 * 1024

    func register(on groups: V1Groups) {
        // Each report costs a Discord call: charged as diagnostics are, and signed by an attested device.
        groups.asserting(groups.users(charging: { .diagnostics($0) }), limit: Self.limit, gate: (largeBodies, Request.largeBody)) { _, _ in true }
            .post("crashes", use: upload)
    }

    @Sendable func upload(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let key = request.headers[.idempotencyKey]
        if let key, !IdempotencyKey.isValid(key) {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        // Stacks nest two levels a frame: the reader takes any depth (cutting the deepest frames),
        // so only the size and the count of values bound what it builds.
        let (bytes, _, slot) = try await request.jsonObject(
            limit: Self.limit, gate: largeBodies, for: quotas.largeBodyHolder(user, request, context), admitted: context.holdsLargeUploadSlot,
            maxDepth: .max, parse: false)
        defer { slot?.leave() }
        do {
            let (result, created) = try await crashes.upload(bytes, idempotencyKey: key, for: user, from: quotas.clientAddress(request, context))
            return try jsonResponse(result, status: created ? .created : .ok)
        } catch let error as CrashPayloadError {
            throw APIError.badRequest(.invalidCrashReport, "Not a MetricKit diagnostic payload: \(error.reason)")
        }
    }
}
