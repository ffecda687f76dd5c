import Foundation

/// App Attest's state, shared by every replica of a store: one-time challenges, and the keys of
/// attested devices with their sign counters. Every check-and-change is one atomic step in the
/// store, so two replicas never both accept one challenge or one counter.
public protocol DeviceAttestations: Sendable {
    /// Keeps a new challenge (by its hash) until `expires`; challenges long expired are forgotten.
    func addChallenge(_ hash: String, expires: Date) async throws
    /// Uses a challenge: `.accepted` once, before it expires; after that it says why not.
    func useChallenge(_ hash: String, now: Date) async throws -> ChallengeUse
    func deviceKey(_ keyID: String) async throws -> DeviceKey?
    /// Keeps a newly attested key; false when the key id is already known (a key is attested once).
    func addDeviceKey(_ key: DeviceKey) async throws -> Bool
    /// Raises the key's counter to `counter` when that is greater than the stored one; false when
    /// it is not (a replayed assertion, or another replica's accepted first).
    func advanceCounter(of keyID: String, to counter: UInt32) async throws -> Bool
}

/// What using a challenge found.
public enum ChallengeUse: Sendable, Hashable {
    case accepted
    /// Used before.
    case used
    case expired
    /// Never issued here (or forgotten long after it expired).
    case unknown
}

/// An attested device's key.
public struct DeviceKey: Sendable, Hashable {
    /// Base64 of the key id (SHA-256 of the public key), as the device names it.
    public var keyID: String
    /// The uncompressed P-256 public key.
    public var publicKey: [UInt8]
    /// The last accepted sign counter (0 right after attestation).
    public var counter: UInt32
    /// `development` or `production`.
    public var environment: String
    public var attestedAt: Date

    public init(keyID: String, publicKey: [UInt8], counter: UInt32 = 0, environment: String, attestedAt: Date) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.attestedAt = attestedAt
    }
}

/// How long after its expiry a challenge is still known (and so refused as expired, not unknown).
let forgottenChallengeAge: TimeInterval = 24 * 3600
