import AppAttest
import ThreadDeskWire
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

extension DeviceCheckFailure {
    /// The outcome a refusal is counted under (`threaddesk_app_attest_total`): the rule it broke,
    /// named as its error code on the wire, so a dashboard and a client's error agree; a key no
    /// longer trusted, told `attestation_required`, is counted as what it is.
    var outcome: String {
        switch self {
        case .attestationRequired: ErrorCode.attestationRequired.rawValue
        case .assertionRequired: ErrorCode.assertionRequired.rawValue
        case .challenge(.used): ErrorCode.challengeUsed.rawValue
        case .challenge(.expired): ErrorCode.challengeExpired.rawValue
        case .challenge: ErrorCode.challengeUnknown.rawValue
        case .attestation(let rule):
            switch rule {
            case .malformed: ErrorCode.attestationMalformed.rawValue
            case .untrustedChain, .invalidSignature, .staleCounter: ErrorCode.attestationUntrusted.rawValue
            case .nonceMismatch: ErrorCode.attestationNonceMismatch.rawValue
            case .rpIDMismatch: ErrorCode.attestationAppIdMismatch.rawValue
            case .counterNotZero: ErrorCode.attestationCounterNotZero.rawValue
            case .wrongEnvironment: ErrorCode.attestationWrongEnvironment.rawValue
            case .keyIDMismatch: ErrorCode.attestationKeyIdMismatch.rawValue
            case .credentialIDMismatch: ErrorCode.attestationCredentialIdMismatch.rawValue
            }
        case .assertion(let rule):
            switch rule {
            case .malformed: ErrorCode.assertionMalformed.rawValue
            case .rpIDMismatch: ErrorCode.assertionAppIdMismatch.rawValue
            case .staleCounter: ErrorCode.assertionReplayed.rawValue
            default: ErrorCode.assertionInvalid.rawValue
            }
        case .keyAlreadyAttested: ErrorCode.attestationKeyKnown.rawValue
        case .unknownKey: ErrorCode.assertionUnknownKey.rawValue
        case .wrongDevice: ErrorCode.assertionWrongDevice.rawValue
        case .keyNoLongerTrusted: "key_untrusted"
        }
    }
}
