import HTTPTypes
import Hummingbird
import NIOCore
import ThreadDeskStore
import ThreadDeskWire

/// Requires an App Attest assertion over the request (`X-App-Attest-Assertion`) where `applies`
/// says so: the writes that cost Discord calls. Only for attested sessions, and for every
/// session when attestation is required; an unattested session under `optional` passes (its
/// limits are the tighter per-address ones). The body is read here (up to `limit`) because the
/// assertion covers it; the handler reads the same bytes.
struct AssertionMiddleware: RouterMiddleware {
    let attest: AttestService
    let limit: Int
    let applies: @Sendable (Request, ThreadDeskRequestContext) -> Bool

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard applies(request, context) else { return try await next(request, context) }
        guard let device = context.attestedDevice else {
            if attest.mode == .required { throw DeviceCheckFailure.attestationRequired }
            return try await next(request, context)
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(limit: limit)
        }
        _ = try await attest.assert(
            header: request.headers[.appAttestAssertion], method: request.method.rawValue, path: request.uri.path,
            body: Array(buffer: body), expected: device)
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let appAttestAssertion = HTTPField.Name(AppAttestAssertion.headerName)!
}
