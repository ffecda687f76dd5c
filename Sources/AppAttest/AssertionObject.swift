/// An assertion as `DCAppAttestService.generateAssertion` returns it: a CBOR map of `signature`
/// (DER ECDSA) and `authenticatorData`.
public struct AssertionObject: Sendable, Hashable {
    public var signature: [UInt8]
    public var authenticatorData: [UInt8]

    public static let maxBytes = 4 * 1024

    public init(_ bytes: [UInt8]) throws(AttestationFailure) {
        let object: CBOR
        do {
            // Room for fields a newer OS adds; the byte cap bounds the work.
            object = try CBORReader(maxBytes: Self.maxBytes, maxDepth: 16, maxItems: 4096).read(bytes)
        } catch {
            throw .malformed("the assertion is not CBOR this server reads (\(error))")
        }
        guard let signature = object["signature"]?.bytes, let authenticatorData = object["authenticatorData"]?.bytes else {
            throw .malformed("the assertion needs signature and authenticatorData")
        }
        self.signature = signature
        self.authenticatorData = authenticatorData
    }
}
