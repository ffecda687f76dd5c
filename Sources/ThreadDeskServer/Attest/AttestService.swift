import AppAttest
import Crypto
import Foundation
import NIOCore
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire
import Synchronization

/// App Attest for the server: one-time challenges, attestations of new keys, assertions of known
/// ones. What it learns (challenges, keys, counters) lives in the store, so every replica checks
/// against the same state. Attestation blobs and assertions never reach a log.
struct AttestService: Sendable {
    let settings: AppAttestSettings
    /// Each app's: its App IDs (the team's and its bundle ids) are the only ones its attestations
    /// and assertions may carry, so a key one app's copy made opens nothing of another's.
    let verifiers: [AppID: AppAttestVerifier]
    let store: any DeviceAttestations
    let now: @Sendable () -> Date
    /// The roots a kept key may have been attested by (see `AppAttestVerifier.rootName`):
    /// Apple's, and the extra root while it is configured.
    let trustedRoots: Set<String>
    /// The devices whose use this process noted lately (see `noteUse`).
    private let sightings = DeviceSightings()
    /// The devices whose keys this process found kept and trusted lately (see `requireTrusted`).
    let trustChecks = DeviceSightings()

    /// Where outcomes are counted (`threaddesk_app_attest_total`).
    let metrics: ServerMetrics?

    init(
        settings: AppAttestSettings, catalog: AppCatalog, store: any DeviceAttestations, metrics: ServerMetrics? = nil,
        now: @escaping @Sendable () -> Date
    ) {
        self.settings = settings
        self.metrics = metrics
        verifiers = Dictionary(
            catalog.apps.map { app in
                (
                    app.id,
                    AppAttestVerifier(
                        appIDs: settings.appIDs(bundleIDs: app.attestBundleIDs), environments: settings.environments,
                        extraRootPEMs: settings.extraRootPEM.map { [$0] } ?? [])
                )
            }, uniquingKeysWith: { first, _ in first })
        self.store = store
        self.now = now
        trustedRoots = Set(["apple"] + (settings.extraRootPEM.flatMap(AppAttestVerifier.rootName(pem:)).map { [$0] } ?? []))
    }

    var mode: AppAttestSettings.Mode { settings.mode }

    /// A new challenge: 256 random bits, base64url; the store keeps only its hash.
    /// - Throws: The store's errors.
    func challenge() async throws -> AttestChallenge {
        let challenge = UserToken.generate()
        let now = now()
        try await store.addChallenge(Self.hash(challenge), expires: now.addingTimeInterval(settings.challengeLifetime / .seconds(1)), now: now)
        return AttestChallenge(challenge: challenge, expiresIn: Int(settings.challengeLifetime.components.seconds))
    }

    // MARK: Counted (`threaddesk_app_attest_total`): a refusal when it happens, acceptance once
    // the key is kept or the assertion's counter raised.

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

    private func counted<T>(_ step: String, accepted: Bool, _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            if accepted { metrics?.appAttest(step: step, outcome: "accepted") }
            return value
        } catch let failure as DeviceCheckFailure {
            count(failure, step: step)
            throw failure
        }
    }

    /// Counts a refusal, also one made outside this service (an unattested caller where
    /// attestation is required).
    /// - Parameters:
    ///   - failure: The refusal, counted under its `outcome`.
    ///   - step: `attestation` or `assertion`.
    func count(_ failure: DeviceCheckFailure, step: String) {
        metrics?.appAttest(step: step, outcome: failure.outcome)
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

    /// Whether this server still accepts `key`: not when it was attested by a root, or in an
    /// environment, no longer accepted (the extra root removed, the environment narrowed).
    /// - Parameter key: A kept key.
    func isTrusted(_ key: DeviceKey) -> Bool {
        guard let environment = AppAttestVerifier.Environment(rawValue: key.environment) else { return false }
        return trustedRoots.contains(key.root) && settings.environments.contains(environment)
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

    /// Notes that an attested device's session was served, so a device in use is not forgotten
    /// though it signs nothing (text in its thread, reads): at most once a day per device and
    /// process, in the store only when the note there is older. A note that fails is left for
    /// the next request: it changes no answer.
    /// - Parameter device: The attested device whose session was served.
    func noteUse(of device: String) async {
        guard let forget = settings.forgetKeysAfter else { return }
        let now = now()
        let every = min(Self.useNotedEvery, forget / 4)
        guard sightings.due(device, now: now, every: every / .seconds(1)) else { return }
        do {
            try await store.noteDeviceKeyUsed(device, now: now, unlessSince: now.addingTimeInterval(-(every / .seconds(1))))
        } catch {
            sightings.forget(device)
        }
    }

    /// How often a device's use is noted at most.
    static let useNotedEvery: Duration = .seconds(86_400)

    private func use(_ challenge: String) async throws {
        guard challenge.utf8.count <= 128 else { throw DeviceCheckFailure.challenge(.unknown) }
        let use = try await store.useChallenge(Self.hash(challenge), now: now())
        guard use == .accepted else { throw DeviceCheckFailure.challenge(use) }
    }

    static func hash(_ challenge: String) -> String { Data(SHA256.hash(data: Data(challenge.utf8))).base64EncodedString() }

    /// The device's id in tokens and limit keys: the key id in base64url.
    static func deviceID(_ keyID: [UInt8]) -> String {
        Data(keyID).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Base64 or base64url, padded or not; at most 64 KiB of text.
    static func bytes(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 64 * 1024 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
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

/// When this process last noted each device's use. Past `capacity` devices, those noted longer
/// than a period ago go first, then the oldest half (noted once more when they come back).
final class DeviceSightings: Sendable {
    private let seen = Mutex<[String: Date]>([:])
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Whether `device` was noted less than `seconds` before `now` (nothing is noted).
    func seenRecently(_ device: String, now: Date, within seconds: TimeInterval) -> Bool {
        seen.withLock { Self.isRecent($0[device], now: now, within: seconds) }
    }

    private static func isRecent(_ last: Date?, now: Date, within seconds: TimeInterval) -> Bool {
        guard let last else { return false }
        return now.timeIntervalSince(last) < seconds && now >= last
    }

    /// Whether `device` is due a note at `now` (then it counts as noted).
    func due(_ device: String, now: Date, every seconds: TimeInterval) -> Bool {
        seen.withLock { seen in
            if Self.isRecent(seen[device], now: now, within: seconds) { return false }
            if seen[device] == nil, seen.count >= capacity {
                seen = seen.filter { Self.isRecent($0.value, now: now, within: seconds) }
                if seen.count >= capacity {
                    let cutoff = seen.values.sorted()[seen.count / 2]
                    seen = seen.filter { $0.value > cutoff }
                }
            }
            seen[device] = now
            return true
        }
    }

    /// Forgets `device`'s note (the store did not take it: the next request tries again).
    func forget(_ device: String) {
        _ = seen.withLock { $0.removeValue(forKey: device) }
    }

    var count: Int { seen.withLock { $0.count } }
}
