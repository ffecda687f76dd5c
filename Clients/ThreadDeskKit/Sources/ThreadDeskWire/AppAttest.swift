/// The answer to `POST /v1/attest/challenge`: a one-time challenge for an App Attest attestation
/// or assertion, valid for `expiresIn` seconds and for one use.
public struct AttestChallenge: Sendable, Codable, Hashable {
    public var challenge: String
    public var expiresIn: Int

    public init(challenge: String, expiresIn: Int) {
        self.challenge = challenge
        self.expiresIn = expiresIn
    }
}

/// A device's first session with a new App Attest key (`attestation` in `POST /v1/session`).
/// The attestation's client data is the challenge's UTF-8 bytes (its SHA-256 is the
/// `clientDataHash` given to `attestKey`).
public struct AttestationPayload: Sendable, Codable, Hashable {
    /// The key id from `generateKey`, base64.
    public var keyId: String
    /// The attestation object from `attestKey`, base64.
    public var attestationObject: String
    /// A challenge from `POST /v1/attest/challenge`.
    public var challenge: String

    public init(keyId: String, attestationObject: String, challenge: String) {
        self.keyId = keyId
        self.attestationObject = attestationObject
        self.challenge = challenge
    }
}

/// How a request carries an App Attest assertion: the `X-App-Attest-Assertion` header,
/// `keyId=<base64>;challenge=<challenge>;assertion=<base64>`. The assertion's client data is
/// ``clientData(method:path:challenge:body:)``: a request signed for one route, body and
/// challenge is good for nothing else.
public enum AppAttestAssertion {
    public static let headerName = "X-App-Attest-Assertion"

    /// The bytes whose SHA-256 is the `clientDataHash` of a request's assertion.
    public static func clientData(method: String, path: String, challenge: String, body: [UInt8]) -> [UInt8] {
        Array("threaddesk-assertion-v1\n\(method.uppercased())\n\(path)\n\(challenge)\n".utf8) + body
    }

    public static func header(keyId: String, challenge: String, assertion: String) -> String {
        "keyId=\(keyId);challenge=\(challenge);assertion=\(assertion)"
    }
}
