import AppAttest
import Foundation
import SoftwareAttester
import SwiftASN1
import Testing
import X509

/// The software attester's attestations pass; each fault breaks exactly the rule it names.
@Suite struct SoftwareAttesterTests {
    let attester: SoftwareAttester
    let verifier: AppAttestVerifier
    let clientDataHash = [UInt8](repeating: 7, count: 32)

    init() throws {
        attester = try SoftwareAttester()
        verifier = AppAttestVerifier(appIDs: [attester.appID], roots: [try Certificate(pemEncoded: attester.rootCertificatePEM)])
    }

    func verify(_ object: [UInt8], keyID: [UInt8], with verifier: AppAttestVerifier? = nil) async throws(AttestationFailure) {
        _ = try await (verifier ?? self.verifier).verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: Date())
    }

    @Test func anAttestationOfTheSoftwareAttesterPasses() async throws {
        let key = attester.generateKey()
        let attested = try await verifier.verifyAttestation(
            try attester.attest(key, clientDataHash: clientDataHash), keyID: key.id, clientDataHash: clientDataHash, at: Date())
        #expect(attested.environment == .development)
        #expect(attested.keyID == key.id)
    }

    @Test func eachBrokenRuleHasItsOwnFailure() async throws {
        let key = attester.generateKey()
        let other = try SoftwareAttester()
        await #expect(throws: AttestationFailure.untrustedChain) {
            try await verify(try other.attest(key, clientDataHash: clientDataHash), keyID: key.id)
        }
        await #expect(throws: AttestationFailure.nonceMismatch) {
            try await verify(try attester.attest(key, clientDataHash: clientDataHash, faults: .init(nonce: true)), keyID: key.id)
        }
        await #expect(throws: AttestationFailure.rpIDMismatch) {
            try await verify(try attester.attest(key, clientDataHash: clientDataHash, faults: .init(appID: "X.other")), keyID: key.id)
        }
        await #expect(throws: AttestationFailure.counterNotZero) {
            try await verify(try attester.attest(key, clientDataHash: clientDataHash, faults: .init(counter: 1)), keyID: key.id)
        }
        await #expect(throws: AttestationFailure.wrongEnvironment) {
            try await verify(
                try attester.attest(key, clientDataHash: clientDataHash, faults: .init(aaguid: Array("somethingelse123".utf8))), keyID: key.id)
        }
        let productionOnly = AppAttestVerifier(
            appIDs: [attester.appID], environments: [.production], roots: [try Certificate(pemEncoded: attester.rootCertificatePEM)])
        await #expect(throws: AttestationFailure.wrongEnvironment) {
            try await verify(try attester.attest(key, clientDataHash: clientDataHash), keyID: key.id, with: productionOnly)
        }
        await #expect(throws: AttestationFailure.keyIDMismatch) {
            try await verify(try attester.attest(key, clientDataHash: clientDataHash), keyID: attester.generateKey().id)
        }
        await #expect(throws: AttestationFailure.credentialIDMismatch) {
            try await verify(
                try attester.attest(key, clientDataHash: clientDataHash, faults: .init(credentialID: [UInt8](repeating: 1, count: 32))),
                keyID: key.id)
        }
        await #expect(throws: AttestationFailure.self) {
            try await verify([0xa0], keyID: key.id)
        }
    }

    @Test func assertionsCountUpAndAreTiedToTheirRequest() throws {
        let key = attester.generateKey()
        let publicKey = try publicKey(of: key)
        let first = try attester.assert(key, clientDataHash: clientDataHash)
        let counter = try verifier.verifyAssertion(first, clientDataHash: clientDataHash, publicKey: publicKey, counter: 0)
        #expect(counter == 1)
        // The same assertion again: its counter is no longer greater.
        #expect(throws: AttestationFailure.staleCounter) {
            _ = try verifier.verifyAssertion(first, clientDataHash: clientDataHash, publicKey: publicKey, counter: counter)
        }
        // Another request (another client data hash) under the same assertion.
        #expect(throws: AttestationFailure.invalidSignature) {
            _ = try verifier.verifyAssertion(first, clientDataHash: [UInt8](repeating: 8, count: 32), publicKey: publicKey, counter: 0)
        }
        // Another device's key.
        #expect(throws: AttestationFailure.invalidSignature) {
            _ = try verifier.verifyAssertion(
                first, clientDataHash: clientDataHash, publicKey: try self.publicKey(of: attester.generateKey()), counter: 0)
        }
        let otherApp = AppAttestVerifier(appIDs: ["X.other"], roots: [])
        #expect(throws: AttestationFailure.rpIDMismatch) {
            _ = try otherApp.verifyAssertion(
                try attester.assert(key, clientDataHash: clientDataHash), clientDataHash: clientDataHash, publicKey: publicKey, counter: 1)
        }
    }

    private func publicKey(of key: SoftwareAttester.Key) throws -> [UInt8] {
        // The key as the server learns it: from an attestation.
        let object = try AttestationObject(try attester.attest(key, clientDataHash: clientDataHash))
        return try #require(try AuthenticatorData(attestation: object.authenticatorData).credential?.publicKey)
    }
}
