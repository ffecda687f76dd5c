import Foundation
import ThreadDeskStore

/// A token names its device's key, and where attestation is required the key must still be
/// kept and trusted for the token to work: one whose key was forgotten (unused for
/// `APP_ATTEST_FORGET_DAYS`), or attested under a root or environment no longer accepted, would
/// otherwise keep passing every route that asks no assertion.
extension AttestService {
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
}
