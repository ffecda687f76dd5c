/// Why an attestation or an assertion is refused: one case per rule, so each refusal can say
/// which rule broke (the server gives each its own error code).
public enum AttestationFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not the format Apple's devices write (CBOR, fields, lengths, certificates); the text says where.
    case malformed(String)
    /// The certificate chain does not lead to a trusted root at the time of the check.
    case untrustedChain
    /// The credential certificate's nonce is not SHA-256(authenticator data ‖ client data hash).
    case nonceMismatch
    /// The relying-party id hash is not SHA-256 of an accepted App ID.
    case rpIDMismatch
    /// An attestation's counter is not 0.
    case counterNotZero
    /// The AAGUID is not one of the accepted environments'.
    case wrongEnvironment
    /// The key id is not SHA-256 of the credential's public key.
    case keyIDMismatch
    /// The credential id in the authenticator data is not the key id.
    case credentialIDMismatch
    /// An assertion's signature does not verify with the device's key.
    case invalidSignature
    /// An assertion's counter is not greater than the last one accepted.
    case staleCounter

    public var description: String {
        switch self {
        case .malformed(let detail): "malformed: \(detail)"
        case .untrustedChain: "the certificate chain does not lead to a trusted root"
        case .nonceMismatch: "the nonce does not match the credential certificate"
        case .rpIDMismatch: "the relying-party id hash is not an accepted App ID's"
        case .counterNotZero: "the attestation's counter is not 0"
        case .wrongEnvironment: "the AAGUID is not an accepted environment's"
        case .keyIDMismatch: "the key id is not SHA-256 of the credential's public key"
        case .credentialIDMismatch: "the credential id is not the key id"
        case .invalidSignature: "the assertion's signature does not verify"
        case .staleCounter: "the assertion's counter is not greater than the last one"
        }
    }
}
