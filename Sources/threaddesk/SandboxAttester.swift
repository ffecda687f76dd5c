import AppAttest
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SoftwareAttester
import Synchronization
import ThreadDeskServer

/// The sandbox's stand-in for a device's Secure Enclave: the software attester, over loopback
/// HTTP, so clients without a crypto library (`threaddesk-chat --attest`, the widget) can attest
/// and assert. The server trusts its root through `APP_ATTEST_EXTRA_ROOT`; Apple's devices are
/// not needed, and nothing it makes passes on a production server.
///
/// - `POST /sandbox/attester/keys` → `{"keyId"}`
/// - `POST /sandbox/attester/attest` `{"keyId","clientData"}` → `{"attestationObject"}`
/// - `POST /sandbox/attester/assert` `{"keyId","clientData"}` → `{"assertion"}` (base64 throughout;
///   the attester hashes the client data, as the SDK's providers do)
final class SandboxAttester: Sendable {
    let attester: SoftwareAttester
    private let keys = Mutex<[String: SoftwareAttester.Key]>([:])

    init(attester: SoftwareAttester) {
        self.attester = attester
    }

    struct Request: Codable, Sendable {
        var keyId: String
        var clientData: String
    }

    func register(on router: Router<ThreadDeskRequestContext>) {
        let group = router.group("sandbox/attester")
        group.post("keys") { [self] _, _ in
            let key = attester.generateKey()
            keys.withLock { $0[key.idBase64] = key }
            return try Self.json(["keyId": key.idBase64])
        }
        group.post("attest") { [self] request, context in
            let (key, hash) = try await read(request, context)
            return try Self.json(["attestationObject": Data(try attester.attest(key, clientDataHash: hash)).base64EncodedString()])
        }
        group.post("assert") { [self] request, context in
            let (key, hash) = try await read(request, context)
            return try Self.json(["assertion": Data(try attester.assert(key, clientDataHash: hash)).base64EncodedString()])
        }
    }

    private func read(_ request: Hummingbird.Request, _ context: ThreadDeskRequestContext) async throws -> (SoftwareAttester.Key, [UInt8]) {
        let body = try await request.decode(as: Request.self, context: context)
        guard let key = keys.withLock({ $0[body.keyId] }), let clientData = Data(base64Encoded: body.clientData) else {
            throw HTTPError(.badRequest, message: "Unknown keyId, or clientData is not base64.")
        }
        return (key, Array(SHA256.hash(data: clientData)))
    }

    private static func json(_ value: [String: String]) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(value))))
    }
}
