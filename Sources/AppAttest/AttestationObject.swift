/// An attestation object as `DCAppAttestService.attestKey` returns it: a CBOR map of `fmt`
/// (`apple-appattest`), `attStmt` (`x5c`: the credential certificate, then the intermediate;
/// `receipt`) and `authData`. Unknown fields are ignored.
public struct AttestationObject: Sendable, Hashable {
    /// DER certificates, the credential certificate first.
    public var certificates: [[UInt8]]
    public var receipt: [UInt8]
    public var authenticatorData: [UInt8]

    /// The largest attestation object read (Apple's are about 5–6 KB, most of it the receipt).
    public static let maxBytes = 32 * 1024

    public init(_ bytes: [UInt8]) throws(AttestationFailure) {
        let object: CBOR
        do {
            // Room for what a newer OS adds (nested fields, long lists); the byte cap bounds the work.
            object = try CBORReader(maxBytes: Self.maxBytes, maxDepth: 16, maxItems: 4096).read(bytes)
        } catch {
            throw .malformed("the attestation object is not CBOR this server reads (\(error))")
        }
        guard object["fmt"]?.text == "apple-appattest" else { throw .malformed("fmt is not apple-appattest") }
        guard let statement = object["attStmt"], let chain = statement["x5c"]?.array, chain.count >= 2, chain.count <= 4 else {
            throw .malformed("attStmt.x5c must hold the credential and intermediate certificates")
        }
        var certificates: [[UInt8]] = []
        for certificate in chain {
            guard let der = certificate.bytes else { throw .malformed("x5c holds something other than certificates") }
            certificates.append(der)
        }
        guard let authenticatorData = object["authData"]?.bytes else { throw .malformed("authData is missing") }
        self.certificates = certificates
        receipt = statement["receipt"]?.bytes ?? []
        self.authenticatorData = authenticatorData
    }
}
