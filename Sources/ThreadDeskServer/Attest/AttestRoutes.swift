import Hummingbird
import ThreadDeskWire

/// `POST /v1/attest/challenge` (app key): a one-time challenge for an attestation or an assertion.
struct AttestRoutes: Sendable {
    let attest: AttestService

    func register(on groups: V1Groups) {
        groups.app(charging: .challenge).post("attest/challenge", use: challenge)
    }

    @Sendable func challenge(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try jsonResponse(try await attest.challenge(), status: .created)
    }
}
