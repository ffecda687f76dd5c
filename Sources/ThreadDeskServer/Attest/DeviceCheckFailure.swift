import AppAttest
import ThreadDeskStore

/// Why App Attest refused a session or a request: the domain error the attest service throws,
/// mapped once to HTTP in `APIError`.
enum DeviceCheckFailure: Error, Sendable, Equatable {
    /// `APP_ATTEST=required` and the session (or the token) is not an attested device's.
    case attestationRequired
    /// The route needs an assertion (`X-App-Attest-Assertion`) from the session's device.
    case assertionRequired
    /// The challenge was not accepted (used, expired or unknown).
    case challenge(ChallengeUse)
    case attestation(AttestationFailure)
    case assertion(AttestationFailure)
    /// The key was attested before: a key is attested once, then asserts.
    case keyAlreadyAttested
    /// An assertion by a key never attested here.
    case unknownKey
    /// An assertion by another key than the session's device.
    case wrongDevice
    /// An assertion by a key attested under a root or in an environment no longer accepted.
    case keyNoLongerTrusted
}
