import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore

/// Requires a live bearer token of a user (401 otherwise); with `attestedOnly` (`APP_ATTEST=required`),
/// one issued to an attested device (401 `attestation_required` otherwise: tokens from before
/// attestation was required, which the SDK answers by attesting), whose key is still kept and
/// trusted (`DeviceTrust.requireTrusted`). With `scopesReads`, for short
/// reads, the token check and the handler share one `ReadScope`: one barrier on a replica's memory.
struct UserAuthentication: RouterMiddleware {
    let sessions: any TokenAuthority
    var attestedOnly = false
    var scopesReads = false
    /// App Attest, when on: an attested device's session served is a use of its key.
    var attest: (any DeviceTrust)?
    /// The token's use is noted beside the request, not in its path (stream openings: see
    /// `TokenAuthority.authenticate(token:notingUseApart:)`).
    var notesUseApart = false

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard scopesReads else { return try await authenticated(request, context: context, next: next) }
        return try await ReadScope.run { try await authenticated(request, context: context, next: next) }
    }

    private func authenticated(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let token = request.bearerToken else { throw APIError.unauthorized }
        var context = context
        context.caller = .user(try await sessions.authenticate(token: token, notingUseApart: notesUseApart), token: token)
        if attestedOnly {
            guard let device = context.attestedDevice else {
                attest?.count(.attestationRequired, step: "token")
                throw DeviceCheckFailure.attestationRequired
            }
            // The token is only as good as its key: forgotten or no longer trusted, it stops.
            do {
                try await attest?.requireTrusted(device)
            } catch let failure as DeviceCheckFailure {
                attest?.count(failure, step: "token")
                throw failure
            }
        }
        if let attest, let device = context.attestedDevice { await attest.noteUse(of: device) }
        return try await next(request, context)
    }
}
