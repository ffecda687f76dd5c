import AppAttest
import Foundation
import ThreadDeskStore

/// Whether a kept key still stands for its device. A token names its device's key, and where
/// attestation is required the key must still be kept and trusted for the token to work: one whose
/// key was forgotten (unused for `APP_ATTEST_FORGET_DAYS`), or attested under a root or environment
/// no longer accepted, would otherwise keep passing every route that asks no assertion. A device in
/// use is noted as such, so its key is not forgotten.
extension AttestService {
    /// Whether this server still accepts `key`: not when it was attested by a root, or in an
    /// environment, no longer accepted (the extra root removed, the environment narrowed).
    /// - Parameter key: A kept key.
    func isTrusted(_ key: DeviceKey) -> Bool {
        guard let environment = AppAttestVerifier.Environment(rawValue: key.environment) else { return false }
        return trustedRoots.contains(key.root) && settings.environments.contains(environment)
    }

    /// How long a key found trusted is believed without asking the store again.
    static let trustRecheckedEvery: Duration = .seconds(60)

    /// Checks that `device`'s key is still kept and trusted. A key found trusted is believed for
    /// `trustRecheckedEvery` on the server's clock.
    /// - Parameter device: The device a token names.
    /// - Throws: `DeviceCheckFailure.unknownKey` when the key is no longer kept,
    ///   `DeviceCheckFailure.keyNoLongerTrusted` when it is no longer trusted (both answers the
    ///   SDK meets by attesting a new key); the store's errors.
    func requireTrusted(_ device: String) async throws {
        let now = now()
        let every = Self.trustRecheckedEvery / .seconds(1)
        guard !trustChecks.seenRecently(device, now: now, within: every) else { return }
        guard let key = try await store.deviceKey(device) else { throw DeviceCheckFailure.unknownKey }
        guard isTrusted(key) else { throw DeviceCheckFailure.keyNoLongerTrusted }
        _ = trustChecks.due(device, now: now, every: every)
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
}
