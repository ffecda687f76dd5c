import HTTPTypes
import Hummingbird
import NIOCore
import ThreadDeskStore
import ThreadDeskWire

/// Requires an App Attest assertion over the request (`X-App-Attest-Assertion`) where `applies`
/// says so: the writes that cost Discord calls. Only for attested sessions, and for every
/// session when attestation is required; an unattested session under `optional` passes (its
/// limits are the tighter per-address ones). Everything that does not need the body is checked
/// before a byte of it is read: the header, its form, the key and the session's device, the
/// declared length. The body is then read here (up to `limit`) because the assertion covers it;
/// the handler reads the same bytes. A large one first takes a slot of `gate` (the large-upload
/// gate, one per user and network), held until the handler is done, which then takes none of its own.
struct AssertionMiddleware: RouterMiddleware {
    let attest: AttestService
    let limit: Int
    /// The large-upload gate and the size from which a body needs a slot of it; nil for routes
    /// whose bodies are small.
    let gate: (gate: ConcurrencyGate, from: Int)?
    /// Whom a slot of `gate` is taken for (one at a time each).
    let holder: @Sendable (Request, ThreadDeskRequestContext) throws -> SlotHolder
    let applies: @Sendable (Request, ThreadDeskRequestContext) -> Bool

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        // An assertion that came unasked is checked all the same: it is what lets a send start a
        // new thread where the old one is gone (see `ThreadService.post`).
        guard applies(request, context) || request.headers[.appAttestAssertion] != nil else { return try await next(request, context) }
        guard let device = context.attestedDevice else {
            if attest.mode == .required {
                attest.count(.attestationRequired, step: "assertion")
                throw DeviceCheckFailure.attestationRequired
            }
            return try await next(request, context)
        }
        guard let app = context.appID else { throw APIError.unauthorized }
        let pending = try await attest.check(header: request.headers[.appAttestAssertion], expected: device, app: app)
        let declared = request.headers[.contentLength].flatMap(Int.init)
        if let declared, declared > limit { throw APIError.tooLarge(limit: limit) }
        var context = context
        var slot: LargeBodySlot?
        defer { slot?.leave() }
        var request = request
        var body = ByteBuffer()
        if let declared, declared <= limit { body.reserveCapacity(min(declared, gate?.from ?? declared)) }
        for try await chunk in request.body {
            guard body.readableBytes + chunk.readableBytes <= limit else { throw APIError.tooLarge(limit: limit) }
            if let gate, slot == nil, body.readableBytes + chunk.readableBytes >= gate.from {
                slot = try gate.gate.enter(try holder(request, context), busy: "Other large uploads are being sent; try again shortly.")
                context.holdsLargeUploadSlot = true
                if let declared { body.reserveCapacity(minimumWritableBytes: max(0, declared - body.readableBytes)) }
            }
            body.writeImmutableBuffer(chunk)
        }
        context.assertedDevice = try await attest.complete(
            pending, method: request.method.rawValue, path: request.uri.path, body: body.readableBytesView)
        request.body = .init(buffer: body)
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let appAttestAssertion = HTTPField.Name(AppAttestAssertion.headerName)!
}

extension AttestService: DeviceTrust {
    func asserting(
        _ group: RouterGroup<ThreadDeskRequestContext>, limit: Int, gate: (gate: ConcurrencyGate, from: Int)?,
        holder: @escaping @Sendable (Request, ThreadDeskRequestContext) throws -> SlotHolder,
        applies: @escaping @Sendable (Request, ThreadDeskRequestContext) -> Bool
    ) -> RouterGroup<ThreadDeskRequestContext> {
        group.add(middleware: AssertionMiddleware(attest: self, limit: limit, gate: gate, holder: holder, applies: applies))
    }
}
