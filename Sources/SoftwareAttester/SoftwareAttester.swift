import AppAttest
import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// What App Attest does on a device, in software, for tests and the sandbox: a throwaway root CA
/// made at start (trusted by a server only through `APP_ATTEST_EXTRA_ROOT`), keys, attestations
/// with a credential certificate carrying the nonce, and assertions. Nothing it makes passes
/// against Apple's root. `Faults` break one rule at a time, so tests can show each is checked.
public struct SoftwareAttester: Sendable {
    public let teamID: String
    public let bundleID: String
    public var environment: AppAttestVerifier.Environment
    /// The root CA's certificate, for `APP_ATTEST_EXTRA_ROOT`.
    public let rootCertificatePEM: String
    /// The root's private key, as bytes (swift-crypto's key type is not `Sendable`).
    private let rootKeyBytes: Data
    private var rootKey: P256.Signing.PrivateKey { try! P256.Signing.PrivateKey(rawRepresentation: rootKeyBytes) }
    private let rootName: DistinguishedName
    private let validity: (from: Date, to: Date)

    public var appID: String { "\(teamID).\(bundleID)" }

    public init(
        teamID: String = "TEAMID1234", bundleID: String = "com.example.app", environment: AppAttestVerifier.Environment = .development,
        validFrom: Date = Date().addingTimeInterval(-86400), validTo: Date = Date().addingTimeInterval(365 * 86400)
    ) throws {
        self.teamID = teamID
        self.bundleID = bundleID
        self.environment = environment
        validity = (validFrom, validTo)
        let rootKey = P256.Signing.PrivateKey()
        rootKeyBytes = rootKey.rawRepresentation
        rootName = try DistinguishedName { CommonName("ThreadDesk software App Attest root (not Apple)") }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: validFrom, notValidAfter: validTo,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        rootCertificatePEM = try root.serializeAsPEM().pemString
    }

    /// A device's key: what `DCAppAttestService.generateKey` makes, with its sign counter.
    public final class Key: Sendable {
        private let keyBytes = P256.Signing.PrivateKey().rawRepresentation
        var privateKey: P256.Signing.PrivateKey { try! P256.Signing.PrivateKey(rawRepresentation: keyBytes) }
        private let counter = Mutex<UInt32>(0)

        public init() {}

        /// SHA-256 of the uncompressed public key, as Apple's key ids are.
        public var id: [UInt8] { Array(SHA256.hash(data: privateKey.publicKey.x963Representation)) }
        public var idBase64: String { Data(id).base64EncodedString() }

        func nextCounter() -> UInt32 {
            counter.withLock { value in
                value += 1
                return value
            }
        }
    }

    /// One broken rule per field, to show the server checks each.
    public struct Faults: Sendable {
        public var nonce = false
        public var appID: String?
        public var counter: UInt32 = 0
        public var aaguid: [UInt8]?
        public var credentialID: [UInt8]?

        public init(nonce: Bool = false, appID: String? = nil, counter: UInt32 = 0, aaguid: [UInt8]? = nil, credentialID: [UInt8]? = nil) {
            self.nonce = nonce
            self.appID = appID
            self.counter = counter
            self.aaguid = aaguid
            self.credentialID = credentialID
        }
    }

    public func generateKey() -> Key { Key() }

    /// An attestation object for `key` over `clientDataHash`, as a device makes one.
    public func attest(_ key: Key, clientDataHash: [UInt8], faults: Faults = Faults()) throws -> [UInt8] {
        let point = Array(key.privateKey.publicKey.x963Representation)
        let cose = CBOR.map([
            .init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(-7)), .init(CBOR(-1), CBOR(1)),
            .init(CBOR(-2), .bytes(Array(point[1..<33]))), .init(CBOR(-3), .bytes(Array(point[33..<65]))),
        ])
        let credentialID = faults.credentialID ?? key.id
        let aaguid = faults.aaguid
            ?? (environment == .development ? AuthenticatorData.developmentAAGUID : AuthenticatorData.productionAAGUID)
        var authenticatorData = rpIDHash(faults.appID) + [0x40] + bigEndian(faults.counter) + aaguid
        authenticatorData += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xff)] + credentialID + cose.encoded
        // What newer OS versions append (without the extension-data flag): ignored by the server.
        authenticatorData += CBOR.map([.init(.text("apple_bundle_version_01"), .text("1"))]).encoded
        var nonce = Array(SHA256.hash(data: authenticatorData + clientDataHash))
        if faults.nonce { nonce[0] ^= 0xff }
        let credential = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.privateKey.publicKey), notValidBefore: validity.from,
            notValidAfter: validity.to, issuer: rootName,
            subject: try DistinguishedName { CommonName(key.id.map { String(format: "%02x", $0) }.joined()) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 8, 2], critical: false, value: try Self.nonceExtension(nonce)[...])
            },
            issuerPrivateKey: .init(rootKey))
        var serializer = DER.Serializer()
        try serializer.serialize(credential)
        let statement = CBOR.map([
            .init(.text("x5c"), .array([.bytes(serializer.serializedBytes), .bytes(try rootDER())])),
            .init(.text("receipt"), .bytes(Array("software receipt".utf8))),
        ])
        return CBOR.map([
            .init(.text("fmt"), .text("apple-appattest")), .init(.text("attStmt"), statement),
            .init(.text("authData"), .bytes(authenticatorData)),
        ]).encoded
    }

    /// An assertion by `key` over `clientDataHash`, with the key's next counter (or `counter`).
    public func assert(_ key: Key, clientDataHash: [UInt8], counter: UInt32? = nil) throws -> [UInt8] {
        let authenticatorData = rpIDHash(nil) + [0x00] + bigEndian(counter ?? key.nextCounter())
        let signature = try key.privateKey.signature(for: Data(SHA256.hash(data: authenticatorData + clientDataHash)))
        return CBOR.map([
            .init(.text("signature"), .bytes(Array(signature.derRepresentation))),
            .init(.text("authenticatorData"), .bytes(authenticatorData)),
        ]).encoded
    }

    private func rpIDHash(_ appID: String?) -> [UInt8] { Array(SHA256.hash(data: Data((appID ?? self.appID).utf8))) }

    private func rootDER() throws -> [UInt8] {
        // The chain's second certificate: here the root itself stands in for Apple's intermediate.
        var serializer = DER.Serializer()
        try serializer.serialize(try Certificate(pemEncoded: rootCertificatePEM))
        return serializer.serializedBytes
    }

    /// `SEQUENCE { [1] EXPLICIT OCTET STRING nonce }`.
    static func nonceExtension(_ nonce: [UInt8]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.serialize(ASN1OctetString(contentBytes: nonce[...]), explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific)
        }
        return serializer.serializedBytes
    }
}

private func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
}
