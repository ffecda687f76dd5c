import DiscordREST
import Hummingbird
import NIOCore
import ThreadDeskCore
import ThreadDeskWire

/// `/v1/session`: open one with the app key (a new user, or an id proven by a token or its
/// `userHash`), close one with its token. With App Attest on, a session is an attested device's
/// when it carries an attestation (a new key) or an assertion (a key attested before).
struct SessionRoutes: Sendable {
    let sessions: SessionService
    let quotas: Quotas
    let attest: AttestService?

    func register(on groups: V1Groups) {
        // Charged in the handler: an attested device's sessions count per device, not per address.
        groups.app.post("session", use: open)
        groups.users.delete("session", use: close)
    }

    @Sendable func open(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        var request = request
        // Collected first: an assertion covers the body's bytes.
        let bytes: ByteBuffer
        do {
            bytes = try await request.collectBody(upTo: Request.smallBodyLimit)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(limit: Request.smallBodyLimit)
        }
        let body = try await request.decode(SessionRequest.self, limit: Request.smallBodyLimit, invalid: ["installation": .invalidInstallation])
        let userID = try body.userId.map { raw in
            guard let id = UserID(raw) else {
                throw APIError.badRequest(.invalidUserId, "userId must be 1–128 characters of letters, digits and - _ . : @")
            }
            return id
        }
        if let hash = body.userHash, hash.count > 128 { throw APIError.badRequest(.invalidUserHash, "userHash is too long.") }
        let installation = try body.installation.map { try DeviceRoutes.installation(JSON($0)) }
        let device = try await attestedDevice(body, request: request, bytes: bytes, context: context)
        let address = device.map(Quotas.deviceKey) ?? quotas.networkAddress(request, context)
        try await quotas.charge(.session, address: address)
        let session = try await sessions.open(
            userID: userID, userHash: body.userHash, presentedToken: context.presentedToken, installation: installation, device: device)
        return try jsonResponse(session, status: .created)
    }

    /// The device this session is for: attested now, or proven by an assertion; nil when App
    /// Attest is off, or optional and neither came.
    private func attestedDevice(
        _ body: SessionRequest, request: Request, bytes: ByteBuffer, context: ThreadDeskRequestContext
    ) async throws -> String? {
        guard let attest, attest.mode != .off else { return nil }
        if let attestation = body.attestation { return try await attest.attest(attestation) }
        let renewing = context.attestedDevice
        if request.headers[.appAttestAssertion] != nil || renewing != nil {
            // A renewal of an attested session needs its device's assertion.
            return try await attest.assert(
                header: request.headers[.appAttestAssertion], method: request.method.rawValue, path: request.uri.path,
                body: Array(buffer: bytes), expected: renewing)
        }
        if attest.mode == .required { throw DeviceCheckFailure.attestationRequired }
        return nil
    }

    @Sendable func close(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await sessions.close(try context.user(), token: try context.userToken())
        return Response(status: .noContent)
    }
}
