/// Which of the deployment's apps something belongs to: a short slug, `[a-z0-9-]{1,32}`, named in
/// the apps file (`APPS_FILE`). A deployment without one serves a single app, `default`.
public struct AppID: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public static let maxLength = 32
    /// The app of a deployment configured by its environment alone, and of every row written
    /// before there were several apps.
    public static let `default` = AppID(unchecked: "default")

    public init?(_ rawValue: String) {
        guard (1...Self.maxLength).contains(rawValue.utf8.count),
            rawValue.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
        else { return nil }
        self.rawValue = rawValue
    }

    private init(unchecked rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let id = AppID(raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an app id: [a-z0-9-]{1,32}"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
