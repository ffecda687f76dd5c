/// `POST /v1/session` (with the `X-App-Key` header).
public struct SessionRequest: Sendable, Codable, Hashable {
    /// The app's own id for its user; omitted, ThreadDesk makes one up.
    public var userId: String?
    /// Proof of `userId` from the app's backend: HMAC-SHA256 of `userId` with the identity
    /// secret, in hex. Required when the server has `IDENTITY_SECRET`.
    public var userHash: String?
    /// What to tell support about the app and device (see ``InstallationValue``).
    public var installation: [String: InstallationValue]?
    /// A new App Attest key's attestation (servers with `APP_ATTEST` on): the session is the
    /// attested device's.
    public var attestation: AttestationPayload?

    public init(
        userId: String? = nil, userHash: String? = nil, installation: [String: InstallationValue]? = nil,
        attestation: AttestationPayload? = nil
    ) {
        self.userId = userId
        self.userHash = userHash
        self.installation = installation
        self.attestation = attestation
    }

    /// A `null` in `installation` is a field not set, as `PUT /v1/installation` takes it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decodeIfPresent(String.self, forKey: .userId)
        userHash = try container.decodeIfPresent(String.self, forKey: .userHash)
        installation = try container.decodeIfPresent([String: InstallationValue?].self, forKey: .installation)?.compactMapValues { $0 }
        attestation = try container.decodeIfPresent(AttestationPayload.self, forKey: .attestation)
    }
}

/// The answer to `POST /v1/session`: the user's id and their bearer token for every other call.
public struct Session: Sendable, Codable, Hashable {
    public var userId: String
    public var token: String

    public init(userId: String, token: String) {
        self.userId = userId
        self.token = token
    }
}

/// One value of the installation info: a short single-line string, a number or a boolean.
/// Known keys: `appVersion`, `buildVersion`, `osPlatform`, `osVersion`, `locale`, `deviceModel`.
public enum InstallationValue: Sendable, Hashable, Codable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral
{
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if abs(value) < 9e15, let whole = Int64(exactly: value) { try container.encode(whole) } else { try container.encode(value) }
        }
    }
}
