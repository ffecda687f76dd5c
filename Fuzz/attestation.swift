// Fuzz target: reading an App Attest attestation object and its authenticator data, and an
// assertion (everything before the certificate and signature checks, which swift-certificates
// and swift-crypto do; the Swift test `mutatedAttestationsEndInAVerdict` runs those on mutated
// attestations). A hostile object is an `AttestationFailure`, never a crash or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttestation(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let object = try? AttestationObject(bytes) {
        precondition(object.certificates.count >= 2 && object.certificates.count <= 4, "x5c bounds not kept")
        if let data = try? AuthenticatorData(attestation: object.authenticatorData) {
            precondition(data.rpIDHash.count == 32, "rp id hash is not 32 bytes")
            precondition(data.credential?.publicKey.count == 65, "the key is not an uncompressed P-256 point")
        }
    }
    // The same bytes as authenticator data and as an assertion.
    if let data = try? AuthenticatorData(attestation: bytes) {
        precondition(data.credential != nil, "an attestation's authenticator data without its credential")
    }
    _ = try? AuthenticatorData(assertion: bytes)
    _ = try? AssertionObject(bytes)
    return 0
}
