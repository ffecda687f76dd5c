import Crypto
import Foundation

/// The provider token: an ES256 JWT signed with the team's .p8 key. Apple rejects tokens older
/// than an hour and refreshes more often than every 20 minutes, so one token is shared by all
/// sends and renewed once it is `renewAfter` old; an actor makes renewal happen once at a time.
public actor APNsTokenManager<C: Clock> where C.Duration == Duration {
    private let keyID: String
    private let teamID: String
    private let key: P256.Signing.PrivateKey
    private let clock: C
    private let wallClock: @Sendable () -> Date
    private let renewAfter: Duration
    private var current: (token: String, issued: C.Instant)?

    /// - Parameters:
    ///   - renewAfter: age at which a token is replaced (between 20 and 60 minutes; default 50).
    ///   - wallClock: the time written into `iat`.
    public init(
        keyID: String, teamID: String, privateKeyPEM: String, clock: C, renewAfter: Duration = .seconds(50 * 60),
        wallClock: @escaping @Sendable () -> Date = Date.init
    ) throws {
        self.keyID = keyID
        self.teamID = teamID
        self.key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        self.clock = clock
        self.wallClock = wallClock
        self.renewAfter = min(max(renewAfter, .seconds(20 * 60)), .seconds(60 * 60))
    }

    /// The token to send now.
    public func token() throws -> String {
        if let current, current.issued.duration(to: clock.now) < renewAfter { return current.token }
        return try renew()
    }

    /// After Apple answered ExpiredProviderToken for `rejected`: a new token, unless another
    /// caller already replaced it.
    public func renew(rejected: String) throws -> String {
        if let current, current.token != rejected { return current.token }
        return try renew()
    }

    private func renew() throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(Int(wallClock().timeIntervalSince1970))}"#
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try key.signature(for: Data(signingInput.utf8))
        let token = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        current = (token, clock.now)
        return token
    }

    /// When the current token was signed, on the injected clock.
    public var issuedAt: C.Instant? { current?.issued }
}

public enum Base64URL {
    public static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
