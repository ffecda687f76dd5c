import AppAttest
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// Apple's own sample, against Apple's real root: the verifier reads what devices write.
@Suite struct AppleSampleTests {
    let bytes = [UInt8](Data(base64Encoded: AppleSample.attestation.filter { !$0.isWhitespace })!)
    let keyID = [UInt8](Data(base64Encoded: AppleSample.keyID)!)
    let verifier = AppAttestVerifier(
        appIDs: ["\(AppleSample.teamID).\(AppleSample.bundleID)"], roots: [AppAttestVerifier.appleRoot()])
    /// Inside the credential certificate's three days.
    let sampleTime = ISO8601DateFormatter().date(from: "2026-04-21T12:00:00Z")!

    @Test func theEmbeddedRootIsApplesByFingerprint() throws {
        let root = AppAttestVerifier.appleRoot()
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(fingerprint == "1C:B9:82:3B:A2:8B:A6:AD:2D:33:A0:06:94:1D:E2:AE:4F:51:3E:F1:D4:E8:31:B9:F7:E0:FA:7B:62:42:C9:32")
        #expect(root.subject.description.contains("Apple App Attestation Root CA"))
        #expect(root.notValidAfter == ISO8601DateFormatter().date(from: "2045-03-15T00:00:00Z"))
    }

    @Test func applesSampleValidatesAtItsOwnTime() async throws {
        let key = try await verifier.verifyAttestation(
            bytes, keyID: keyID, clientDataHash: Array(AppleSample.challenge.utf8), at: sampleTime)
        #expect(key.environment == .production)
        #expect(key.keyID == keyID)
        #expect(Array(SHA256.hash(data: key.publicKey)) == keyID)
        #expect(!key.receipt.isEmpty)
    }

    @Test func applesSampleIsRefusedOnceItsCertificateExpired() async throws {
        await #expect(throws: AttestationFailure.untrustedChain) {
            _ = try await verifier.verifyAttestation(
                bytes, keyID: keyID, clientDataHash: Array(AppleSample.challenge.utf8),
                at: ISO8601DateFormatter().date(from: "2026-05-01T00:00:00Z")!)
        }
    }

    @Test func applesSampleWithAnotherChallengeIsANonceMismatch() async throws {
        await #expect(throws: AttestationFailure.nonceMismatch) {
            _ = try await verifier.verifyAttestation(bytes, keyID: keyID, clientDataHash: Array("another".utf8), at: sampleTime)
        }
    }

    @Test func applesSampleForAnotherAppIsAnRPIDMismatch() async throws {
        let other = AppAttestVerifier(appIDs: ["1234567890.com.example.other"], roots: [AppAttestVerifier.appleRoot()])
        await #expect(throws: AttestationFailure.rpIDMismatch) {
            _ = try await other.verifyAttestation(bytes, keyID: keyID, clientDataHash: Array(AppleSample.challenge.utf8), at: sampleTime)
        }
    }

    @Test func applesProductionSampleIsRefusedWhereOnlyDevelopmentIsAccepted() async throws {
        let development = AppAttestVerifier(
            appIDs: ["\(AppleSample.teamID).\(AppleSample.bundleID)"], environments: [.development], roots: [AppAttestVerifier.appleRoot()])
        await #expect(throws: AttestationFailure.wrongEnvironment) {
            _ = try await development.verifyAttestation(
                bytes, keyID: keyID, clientDataHash: Array(AppleSample.challenge.utf8), at: sampleTime)
        }
    }

    /// Newer OS versions append an extension map after the key (flags 0x40, no ED bit): ignored.
    @Test func theTrailingExtensionMapIsIgnored() throws {
        let object = try AttestationObject(bytes)
        let data = try AuthenticatorData(attestation: object.authenticatorData)
        #expect(data.flags == 0x40)
        #expect(data.credential?.credentialID == keyID)
        #expect(object.authenticatorData.count > 37 + 18 + 32 + 77)
    }
}
