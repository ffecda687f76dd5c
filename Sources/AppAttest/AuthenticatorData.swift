/// The authenticator data a device signs: the relying party's hash, flags, the sign counter and,
/// in an attestation, the new credential. Anything after what is read here (the extension map
/// newer OS versions append, whatever the flags say) is ignored, not refused.
public struct AuthenticatorData: Sendable, Hashable {
    /// SHA-256 of the App ID (`TEAMID.bundle.id`).
    public var rpIDHash: [UInt8]
    public var flags: UInt8
    public var counter: UInt32
    /// The attested credential: only in an attestation's authenticator data.
    public var credential: AttestedCredential?

    public struct AttestedCredential: Sendable, Hashable {
        /// `appattestdevelop`, or `appattest` and seven zero bytes.
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        /// The credential's public key as an uncompressed P-256 point (`04 ‖ x ‖ y`).
        public var publicKey: [UInt8]
    }

    /// The 37 bytes every authenticator data starts with; the rest is ignored (assertions).
    public init(assertion bytes: [UInt8]) throws(AttestationFailure) {
        guard bytes.count >= 37 else { throw .malformed("authenticator data is shorter than 37 bytes") }
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        credential = nil
    }

    /// An attestation's: the 37 bytes, then the attested credential (AAGUID, id, COSE key), which
    /// must be there; bytes after the key are ignored.
    public init(attestation bytes: [UInt8]) throws(AttestationFailure) {
        try self.init(assertion: bytes)
        var offset = 37
        guard bytes.count >= offset + 18 else { throw .malformed("authenticator data holds no attested credential") }
        let aaguid = Array(bytes[offset..<offset + 16])
        let idLength = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
        offset += 18
        guard bytes.count - offset >= idLength else { throw .malformed("the credential id is cut short") }
        let credentialID = Array(bytes[offset..<offset + idLength])
        offset += idLength
        let key: CBOR
        do {
            key = try CBORReader(maxBytes: bytes.count, maxDepth: 16, maxItems: 4096).readPrefix(bytes[offset...]).item
        } catch {
            throw .malformed("the credential public key is not CBOR")
        }
        credential = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKey: try Self.p256Point(cose: key))
    }

    /// A COSE EC2 key on P-256 (kty 2, crv 1, alg ES256 when given) as an uncompressed point.
    static func p256Point(cose key: CBOR) throws(AttestationFailure) -> [UInt8] {
        guard key[1]?.int == 2, key[-1]?.int == 1, key[3].map({ $0.int == -7 }) ?? true,
            let x = key[-2]?.bytes, let y = key[-3]?.bytes, x.count == 32, y.count == 32
        else { throw .malformed("the credential public key is not a P-256 COSE key") }
        return [0x04] + x + y
    }

    /// The AAGUID of keys made in the development environment.
    public static let developmentAAGUID = Array("appattestdevelop".utf8)
    /// The AAGUID of keys made in production.
    public static let productionAAGUID = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
}
