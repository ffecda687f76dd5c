import AppAttest
import Crypto
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Attestation: a new key's attestation verified over its challenge, then the key kept as the
/// device's identity once the caller's limits said yes.
extension AttestService {
    /// Verifies a new key's attestation over its challenge, spending the challenge; the key, for
    /// `keep` once the caller's limits said yes.
    /// - Parameter payload: The key id, attestation object and challenge the app sent.
    /// - Throws: `DeviceCheckFailure.attestation` for a broken rule, `.challenge` for a challenge
    ///   used, expired or unknown; the store's errors.
    func verify(_ payload: AttestationPayload, app: AppID) async throws -> DeviceKey {
        try await counted("attestation", accepted: false) { try await verifying(payload, app: app) }
    }

    /// Keeps a key `verify` accepted: from now on the device's identity.
    /// - Parameter key: The verified key.
    /// - Throws: `DeviceCheckFailure.keyAlreadyAttested` for a key kept before; the store's errors.
    func keep(_ key: DeviceKey) async throws {
        try await counted("attestation", accepted: true) { try await keeping(key) }
    }

    /// Verifies a new key's attestation over its challenge; the key, for `keep` once the
    /// caller's limits said yes (nothing is stored here but the challenge's use).
    private func verifying(_ payload: AttestationPayload, app: AppID) async throws -> DeviceKey {
        guard let verifier = verifiers[app] else { throw DeviceCheckFailure.attestation(.rpIDMismatch) }
        guard let keyID = Self.bytes(payload.keyId), keyID.count == 32, let object = Self.bytes(payload.attestationObject),
            payload.challenge.utf8.count <= 128
        else { throw DeviceCheckFailure.attestation(.malformed("keyId and attestationObject must be base64")) }
        // Read before the challenge is spent: a malformed body leaves the challenge usable.
        let clientDataHash = Array(SHA256.hash(data: Data(payload.challenge.utf8)))
        try await use(payload.challenge)
        let attested: AppAttestVerifier.AttestedKey
        do {
            attested = try await verifier.verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: now())
        } catch {
            throw DeviceCheckFailure.attestation(error)
        }
        return DeviceKey(
            keyID: Self.deviceID(keyID), publicKey: attested.publicKey, environment: attested.environment.rawValue, root: attested.root,
            attestedAt: now())
    }

    /// Keeps a key `verify` accepted: from now on the device's identity. Keys unused for
    /// `forgetKeysAfter` make room first, a few at a time.
    private func keeping(_ key: DeviceKey) async throws {
        let unusedSince = settings.forgetKeysAfter.map { now().addingTimeInterval(-($0 / .seconds(1))) }
        guard try await store.addDeviceKey(key, forgettingKeysUnusedSince: unusedSince) else { throw DeviceCheckFailure.keyAlreadyAttested }
    }
}
