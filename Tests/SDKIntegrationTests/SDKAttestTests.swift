import Crypto
import Foundation
import Synchronization
import SoftwareAttester
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskKit
import ThreadDeskServer
import ThreadDeskStore

/// The software attester as the SDK's provider: the Secure Enclave's three calls, in process.
struct InProcessAttestProvider: AppAttestProvider {
    let attester: SoftwareAttester
    let keys = KeyRing()

    final class KeyRing: Sendable {
        let keys = Mutex<[String: SoftwareAttester.Key]>([:])
    }

    func generateKey() async throws -> String {
        let key = attester.generateKey()
        keys.keys.withLock { $0[key.idBase64] = key }
        return key.idBase64
    }

    func attestKey(_ keyID: String, clientData: Data) async throws -> Data {
        Data(try attester.attest(try key(keyID), clientDataHash: Array(SHA256.hash(data: clientData))))
    }

    func generateAssertion(_ keyID: String, clientData: Data) async throws -> Data {
        Data(try attester.assert(try key(keyID), clientDataHash: Array(SHA256.hash(data: clientData))))
    }

    private func key(_ id: String) throws -> SoftwareAttester.Key {
        try requireValue(keys.keys.withLock { $0[id] }, "no key \(id)")
    }
}

/// With `APP_ATTEST=required`, the SDK attests when it opens a session and signs what needs it.
@Suite("ThreadDeskKit with App Attest", .timeLimit(.minutes(2)))
struct SDKAttestTests {
    @Test func anAttestedClientOpensSendsUploadsAndRenews() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer({ configuration in
            configuration.attest.mode = .required
            configuration.attest.teamID = attester.teamID
            configuration.attest.bundleIDs = [attester.bundleID]
            configuration.attest.extraRootPEM = attester.rootCertificatePEM
        }) { server in
            // Without a provider: refused, with the code that says why.
            await #expect { try await server.client(device: "plain").open() } throws: { error in
                (error as? ThreadDeskError)?.code == .attestationRequired
            }
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            let session = try await client.open()
            #expect(session.token.contains("."))
            // The first message needs an assertion: the client adds one when asked.
            #expect(try await client.send("Hello, genuinely").content == "Hello, genuinely")
            _ = try await server.thread(of: client)
            #expect(try await client.send("Again").content == "Again")
            #expect(try await client.uploadDiagnostics(["battery": 80]).size > 0)
            // A renewal is signed by the session's key: the same user, on the same device.
            let renewed = try await client.renewSession()
            #expect(renewed.userId == session.userId && renewed.token != session.token)
            #expect(renewed.token.split(separator: ".").last == session.token.split(separator: ".").last)
        }
    }
}
