import Foundation

/// App Attest's state, shared by every replica of a store: one-time challenges, and the keys of
/// attested devices with their sign counters. Every check-and-change is one atomic step in the
/// store, so two replicas never both accept one challenge or one counter.
public protocol DeviceAttestations: Sendable {
    /// Keeps a new challenge (by its hash) until `expires`; challenges expired more than
    /// `forgottenChallengeAge` before `now` are deleted.
    func addChallenge(_ hash: String, expires: Date, now: Date) async throws
    /// Uses a challenge: `.accepted` once, before it expires; after that it says why not.
    func useChallenge(_ hash: String, now: Date) async throws -> ChallengeUse
    func deviceKey(_ keyID: String) async throws -> DeviceKey?
    /// Keeps a newly attested key; false when the key id is already known (a key is attested once).
    /// First forgets up to `forgottenKeysPerAttestation` keys last used before `unusedSince` (nil:
    /// none), so the table grows only with devices in use: a forgotten device attests anew.
    func addDeviceKey(_ key: DeviceKey, forgettingKeysUnusedSince unusedSince: Date?) async throws -> Bool
    /// Raises the key's counter to `counter` when that is greater than the stored one, noting
    /// `now` as its last use; false when it is not (a replayed assertion, or another replica's
    /// accepted first).
    func advanceCounter(of keyID: String, to counter: UInt32, now: Date) async throws -> Bool
    /// Notes `now` as the key's last use when the one noted is before `unlessSince` (a session
    /// of the device served: a device that only sends text in its thread signs nothing, and is in
    /// use all the same).
    func noteDeviceKeyUsed(_ keyID: String, now: Date, unlessSince: Date) async throws
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
    /// The root the attestation's chain led to: `apple`, or `sha256:<hex>` of an extra root (a
    /// test root); empty when not known (a key kept before roots were). Checked on every
    /// assertion, so a key a root attested stops working when that root is no longer trusted.
    public var root: String
    public var attestedAt: Date
    /// The last accepted assertion's time (the attestation's, before any).
    public var usedAt: Date

    public init(
        keyID: String, publicKey: [UInt8], counter: UInt32 = 0, environment: String, root: String, attestedAt: Date, usedAt: Date? = nil
    ) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.root = root
        self.attestedAt = attestedAt
        self.usedAt = usedAt ?? attestedAt
    }
}

/// How many unused keys one new attestation forgets at most: more than attestations add, so the
/// table shrinks back to the devices in use, in steps no request notices.
public let forgottenKeysPerAttestation = 100

/// How long after its expiry a challenge is still known (and so refused as expired, not unknown):
/// a minute, so the table holds no more than the challenges of the last few minutes (whose number
/// the per-app challenge limit bounds). Each new challenge deletes those past it.
public let forgottenChallengeAge: TimeInterval = 60

/// A kept device key the store cannot read back (its public key is not base64): a fault of the
/// store, answered as one (500), never as the client's malformed assertion.
public struct CorruptDeviceKey: Error, Sendable, CustomStringConvertible {
    public let keyID: String
    public init(keyID: String) { self.keyID = keyID }
    public var description: String { "the stored App Attest key \(keyID) is unreadable" }
}
