import AppAttest
import Crypto
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

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
    let sightings = DeviceSightings()
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

    /// Runs a step of `verify`, `keep`, `check` or `complete`, counted in
    /// `threaddesk_app_attest_total`: a refusal when it happens, acceptance (`accepted`) once the
    /// key is kept or the assertion's counter raised.
    func counted<T>(_ step: String, accepted: Bool, _ body: () async throws -> T) async throws -> T {
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

    /// Spends `challenge`: each is good for one attestation or assertion.
    func use(_ challenge: String) async throws {
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
}
