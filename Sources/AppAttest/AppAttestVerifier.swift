import Crypto
import Foundation
import SwiftASN1
// A chain is checked at the time the server's clock says (see `verifyAttestation`), not the wall clock.
@_spi(FixedExpiryValidationTime) import X509

/// Checks attestations and assertions as Apple documents them ("Validating apps that connect to
/// your server"). Pure: it keeps no state; the caller supplies the client data hash it expects,
/// the stored key and counter, and keeps what a check returns.
public struct AppAttestVerifier: Sendable {
    /// The development and production App Attest environments (the AAGUID says which).
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        case development, production
    }

    /// The App IDs accepted (`TEAMID.bundle.id`), by the SHA-256 that authenticator data carries.
    public let appIDHashes: Set<[UInt8]>
    public let environments: Set<Environment>
    public let roots: [Certificate]

    /// `roots`: Apple's App Attestation root by default; tests add a root of their own.
    public init(appIDs: [String], environments: Set<Environment> = Set(Environment.allCases), roots: [Certificate]) {
        appIDHashes = Set(appIDs.map { Array(SHA256.hash(data: Data($0.utf8))) })
        self.environments = environments
        self.roots = roots
    }

    /// Apple's root and the certificates in `extraRootPEMs` (those that do not parse are left out:
    /// check them first with `isCertificate(pem:)`).
    public init(appIDs: [String], environments: Set<Environment> = Set(Environment.allCases), extraRootPEMs: [String]) {
        self.init(
            appIDs: appIDs, environments: environments,
            roots: [Self.appleRoot()] + extraRootPEMs.compactMap { try? Certificate(pemEncoded: $0) })
    }

    /// Whether `pem` is one X.509 certificate.
    public static func isCertificate(pem: String) -> Bool { (try? Certificate(pemEncoded: pem)) != nil }

    /// Apple's App Attestation Root CA, parsed.
    public static func appleRoot() -> Certificate {
        // A constant checked by a test: it parses.
        try! Certificate(pemEncoded: AppleAppAttestationRoot.pem)
    }

    /// When Apple's root shipped here is valid (what the doctor checks the machine's time against).
    public static var appleRootValidity: (from: Date, until: Date) {
        let root = appleRoot()
        return (root.notValidBefore, root.notValidAfter)
    }

    /// What an accepted attestation establishes about the device's key.
    public struct AttestedKey: Sendable, Hashable {
        public var keyID: [UInt8]
        /// Uncompressed P-256 point.
        public var publicKey: [UInt8]
        public var environment: Environment
        /// Apple's receipt, for a later fraud-metric check (not used here).
        public var receipt: [UInt8]
        /// The root the chain led to (see `rootName(_:)`): kept with the key, checked again on
        /// each assertion.
        public var root: String
    }

    /// How a kept key names its root: `apple` for Apple's App Attestation root, `sha256:<hex>` of
    /// the DER for any other (a test root).
    public static func rootName(_ certificate: Certificate) -> String {
        if certificate == appleRoot() { return "apple" }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate)) != nil else { return "unreadable" }
        return "sha256:" + SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The name of the root in `pem` (see `rootName(_:)`), nil when it is not a certificate.
    public static func rootName(pem: String) -> String? {
        (try? Certificate(pemEncoded: pem)).map(rootName)
    }

    /// The nonce extension of the credential certificate.
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// Verifies an attestation of `keyID` over `clientDataHash`, with certificates valid at `time`.
    /// Each broken rule throws its own `AttestationFailure`.
    public func verifyAttestation(
        _ bytes: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], at time: Date
    ) async throws(AttestationFailure) -> AttestedKey {
        let object = try AttestationObject(bytes)
        // 1. The chain: credential certificate ← intermediate ← a trusted root, at `time`.
        let certificates: [Certificate]
        do {
            certificates = try object.certificates.map { try Certificate(derEncoded: $0) }
        } catch {
            throw .malformed("a certificate in x5c is not DER X.509")
        }
        let leaf = certificates[0]
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(fixedExpiryValidationTime: time) }
        guard case .validCertificate(let chain) = await verifier.validate(leaf: leaf, intermediates: CertificateStore(certificates.dropFirst())),
            let root = chain.last
        else { throw .untrustedChain }
        // 2–4. The nonce: SHA-256(authenticator data ‖ client data hash), as the certificate says.
        let nonce = Array(SHA256.hash(data: object.authenticatorData + clientDataHash))
        guard let embedded = Self.nonce(in: leaf) else { throw .malformed("the credential certificate has no readable nonce") }
        guard embedded == nonce else { throw .nonceMismatch }
        // 5. The key id is SHA-256 of the credential certificate's public key.
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else { throw .malformed("the credential key is not P-256") }
        let publicKey = Array(leafKey.x963Representation)
        guard Array(SHA256.hash(data: publicKey)) == keyID else { throw .keyIDMismatch }
        let data = try AuthenticatorData(attestation: object.authenticatorData)
        // 6. The App ID.
        guard appIDHashes.contains(data.rpIDHash) else { throw .rpIDMismatch }
        // 7. A new key has signed nothing yet.
        guard data.counter == 0 else { throw .counterNotZero }
        guard let credential = data.credential else { throw .malformed("no attested credential") }
        // 8. The environment the key was made in.
        let environment: Environment
        switch credential.aaguid {
        case AuthenticatorData.developmentAAGUID: environment = .development
        case AuthenticatorData.productionAAGUID: environment = .production
        default: throw .wrongEnvironment
        }
        guard environments.contains(environment) else { throw .wrongEnvironment }
        // 9. The credential is the key the certificate is for.
        guard credential.credentialID == keyID else { throw .credentialIDMismatch }
        guard credential.publicKey == publicKey else { throw .keyIDMismatch }
        return AttestedKey(keyID: keyID, publicKey: publicKey, environment: environment, receipt: object.receipt, root: Self.rootName(root))
    }

    /// The nonce in extension 1.2.840.113635.100.8.2: `SEQUENCE { [1] EXPLICIT OCTET STRING }`.
    static func nonce(in certificate: Certificate) -> [UInt8]? {
        guard let value = certificate.extensions[oid: nonceExtension]?.value else { return nil }
        return try? DER.sequence(DER.parse(Array(value)), identifier: .sequence) { nodes in
            try DER.explicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { node in
                Array(try ASN1OctetString(derEncoded: node).bytes)
            }
        }
    }

    /// Verifies an assertion over `clientDataHash` by the key `publicKey` (uncompressed P-256),
    /// whose last accepted counter is `counter`; returns the assertion's counter, which the
    /// caller stores (only if still greater than the stored one: two replicas may race).
    public func verifyAssertion(
        _ bytes: [UInt8], clientDataHash: [UInt8], publicKey: [UInt8], counter: UInt32
    ) throws(AttestationFailure) -> UInt32 {
        let assertion = try AssertionObject(bytes)
        let data = try AuthenticatorData(assertion: assertion.authenticatorData)
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else { throw .malformed("the stored key is not P-256") }
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: assertion.signature) else {
            throw .malformed("the signature is not DER ECDSA")
        }
        // The device signs the nonce SHA-256(authenticator data ‖ client data hash) with ES256.
        let nonce = Data(SHA256.hash(data: assertion.authenticatorData + clientDataHash))
        guard key.isValidSignature(signature, for: nonce) else { throw .invalidSignature }
        guard appIDHashes.contains(data.rpIDHash) else { throw .rpIDMismatch }
        guard data.counter > counter else { throw .staleCounter }
        return data.counter
    }
}
