import AppAttest
import Crypto
import Foundation
import ThreadDeskCore
import NIOCore
import ThreadDeskStore
import ThreadDeskWire

/// Assertion: a signed request checked in two steps, what can be before the body is read (the
/// header, the device, its key, the challenge spent), then the signature over the body.
extension AttestService {
    /// Checks an assertion header before the body is read (see `checking`), spending its challenge.
    /// - Parameters:
    ///   - header: `X-App-Attest-Assertion`, nil when missing.
    ///   - expected: The session's device, when the session is one's.
    /// - Throws: `DeviceCheckFailure` (`assertionRequired`, `assertion(.malformed)`, `wrongDevice`,
    ///   `unknownKey`, `keyNoLongerTrusted`, `challenge`); `CorruptDeviceKey` when the stored key is
    ///   unreadable; the store's errors.
    func check(header: String?, expected: String?, app: AppID) async throws -> PendingAssertion {
        try await counted("assertion", accepted: false) { try await checking(header: header, expected: expected, app: app) }
    }

    /// Verifies a checked assertion over the request and raises the key's counter.
    /// - Parameters:
    ///   - pending: What `check` accepted.
    ///   - method: The request's method.
    ///   - path: The request's path.
    ///   - body: The request's body, hashed without a copy.
    /// - Returns: The device.
    /// - Throws: `DeviceCheckFailure.assertion` for a bad signature or a replayed counter,
    ///   `.unknownKey` for a key forgotten meanwhile; the store's errors.
    func complete(_ pending: PendingAssertion, method: String, path: String, body: ByteBufferView) async throws -> String {
        try await counted("assertion", accepted: true) { try await completing(pending, method: method, path: path, body: body) }
    }

    /// Verifies the assertion in `header` over this request (method, path, body), by `expected`
    /// when the session is already a device's; raises the key's counter. Returns the device.
    /// - Throws: What `check` and `complete` throw.
    func assert(header: String?, method: String, path: String, body: ByteBufferView, expected: String?, app: AppID) async throws -> String {
        try await complete(try await check(header: header, expected: expected, app: app), method: method, path: path, body: body)
    }

    /// An assertion header whose form, key and device were checked; its signature over the body
    /// is `complete`'s to check.
    struct PendingAssertion: Sendable {
        let device: String
        let key: DeviceKey
        let challenge: String
        let assertion: [UInt8]
        /// The app whose App IDs the assertion must carry.
        let app: AppID
    }

    /// What can be checked before the body is read: the header is there and well-formed, names
    /// the expected device, and that key is known and still trusted; then the challenge is spent.
    private func checking(header: String?, expected: String?, app: AppID) async throws -> PendingAssertion {
        guard let header else { throw DeviceCheckFailure.assertionRequired }
        guard let parts = Self.parse(header), let keyID = Self.bytes(parts.keyId), keyID.count == 32,
            let assertion = Self.bytes(parts.assertion)
        else { throw DeviceCheckFailure.assertion(.malformed("\(AppAttestAssertion.headerName) must be keyId=…;challenge=…;assertion=…")) }
        let device = Self.deviceID(keyID)
        if let expected, expected != device { throw DeviceCheckFailure.wrongDevice }
        guard let key = try await store.deviceKey(device) else { throw DeviceCheckFailure.unknownKey }
        guard isTrusted(key) else { throw DeviceCheckFailure.keyNoLongerTrusted }
        // The stored key must be one: otherwise the store is at fault (a 500), not the client.
        guard (try? P256.Signing.PublicKey(x963Representation: key.publicKey)) != nil else { throw CorruptDeviceKey(keyID: device) }
        // Spent before a byte of the body is read: one challenge cannot start many slow uploads.
        try await use(parts.challenge)
        return PendingAssertion(device: device, key: key, challenge: parts.challenge, assertion: assertion, app: app)
    }

    /// Verifies the assertion over the request (its challenge spent by `checking`); raises the counter.
    private func completing(_ pending: PendingAssertion, method: String, path: String, body: ByteBufferView) async throws -> String {
        // SHA-256 of the client data (`AppAttestAssertion.clientData`) without copying the body.
        var hasher = SHA256()
        hasher.update(data: AppAttestAssertion.clientData(method: method, path: path, challenge: pending.challenge, body: []))
        body.withContiguousStorageIfAvailable { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) } ?? hasher.update(data: Array(body))
        guard let verifier = verifiers[pending.app] else { throw DeviceCheckFailure.assertion(.rpIDMismatch) }
        let counter: UInt32
        do {
            counter = try verifier.verifyAssertion(
                pending.assertion, clientDataHash: Array(hasher.finalize()), publicKey: pending.key.publicKey, counter: pending.key.counter)
        } catch {
            throw DeviceCheckFailure.assertion(error)
        }
        // Another replica may have taken this counter (or a later one) meanwhile, or the key was
        // forgotten since it was read (unused for long).
        guard try await store.advanceCounter(of: pending.device, to: counter, now: now()) else {
            if try await store.deviceKey(pending.device) == nil { throw DeviceCheckFailure.unknownKey }
            throw DeviceCheckFailure.assertion(.staleCounter)
        }
        return pending.device
    }

    static func parse(_ header: String) -> (keyId: String, challenge: String, assertion: String)? {
        guard header.utf8.count <= 16 * 1024 else { return nil }
        var fields: [String: String] = [:]
        for part in header.split(separator: ";") {
            guard let equals = part.firstIndex(of: "=") else { return nil }
            fields[part[..<equals].trimmingCharacters(in: .whitespaces)] = part[part.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        guard let keyId = fields["keyId"], let challenge = fields["challenge"], let assertion = fields["assertion"] else { return nil }
        return (keyId, challenge, assertion)
    }
}
