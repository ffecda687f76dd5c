import DiscordREST
import Hummingbird
import NIOCore
import ThreadDeskCore
import ThreadDeskStore
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
        groups.anyUsers.delete("session", use: close)
        // Ending every session of the user is theirs to ask: an attested device signs it.
        groups.signed(groups.users(charging: { .update($0) })).delete("sessions", use: closeAll)
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
        let network = quotas.networkAddress(request, context)
        // Before any assertion is checked, a challenge spent or the store read: a failed attempt
        // costs its sender as much as a good one.
        if let attest, attest.mode != .off { try await quotas.charge(.sessionAttempt, address: network) }
        let device: String?
        if let attest, attest.mode != .off, let attestation = body.attestation {
            // Every attempt counts against the address, failed ones too; the key is kept only
            // once it verified and the network's new keys and the device's session limit said yes.
            try await quotas.charge(.attestation, address: network)
            let key = try await attest.verify(attestation, app: try context.keyedApp().id)
            try await quotas.charge(.newKey, address: network)
            try await quotas.charge(.session, address: Quotas.deviceKey(key.keyID, network: network))
            try await attest.keep(key)
            device = key.keyID
        } else {
            device = try await assertedDevice(request: request, bytes: bytes, context: context)
            try await quotas.charge(.session, address: device.map { Quotas.deviceKey($0, network: network) } ?? network)
        }
        let session = try await sessions.open(
            app: try context.keyedApp(), userID: userID, userHash: body.userHash, presentedToken: context.presentedToken, installation: installation, device: device)
        return try jsonResponse(session, status: .created)
    }

    /// The device this session is for when no attestation came: proven by an assertion; nil when
    /// App Attest is off, or optional and no assertion came.
    private func assertedDevice(request: Request, bytes: ByteBuffer, context: ThreadDeskRequestContext) async throws -> String? {
        guard let attest, attest.mode != .off else { return nil }
        // The device the earlier session's token names: unverified, so only what the assertion
        // must prove.
        let renewing = context.claimedDevice
        if request.headers[.appAttestAssertion] != nil || renewing != nil {
            // A renewal of an attested session needs its device's assertion.
            return try await attest.assert(
                header: request.headers[.appAttestAssertion], method: request.method.rawValue, path: request.uri.path,
                body: bytes.readableBytesView, expected: renewing, app: try context.keyedApp().id)
        }
        if attest.mode == .required {
            attest.count(.attestationRequired, step: "attestation")
            throw DeviceCheckFailure.attestationRequired
        }
        return nil
    }

    /// Signs the user out everywhere: every token of theirs ends, this one included.
    @Sendable func closeAll(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await sessions.closeAll(try context.user())
        return Response(status: .noContent)
    }

    @Sendable func close(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await sessions.close(try context.user(), token: try context.userToken())
        return Response(status: .noContent)
    }
}
