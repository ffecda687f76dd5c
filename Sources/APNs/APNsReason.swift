/// Apple's reasons for refusing a notification, as the `reason` field of an error answer says.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseID
    case badDeviceToken
    case badExpirationDate
    case badMessageID
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIDInToken
    case badPath
    case methodNotAllowed
    case expiredToken
    case unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    case unknown(String)

    private static let names: [(APNsReason, String)] = [
        (.badCollapseID, "BadCollapseId"), (.badDeviceToken, "BadDeviceToken"), (.badExpirationDate, "BadExpirationDate"),
        (.badMessageID, "BadMessageId"), (.badPriority, "BadPriority"), (.badTopic, "BadTopic"),
        (.deviceTokenNotForTopic, "DeviceTokenNotForTopic"), (.duplicateHeaders, "DuplicateHeaders"), (.idleTimeout, "IdleTimeout"),
        (.invalidPushType, "InvalidPushType"), (.missingDeviceToken, "MissingDeviceToken"), (.missingTopic, "MissingTopic"),
        (.payloadEmpty, "PayloadEmpty"), (.topicDisallowed, "TopicDisallowed"), (.badCertificate, "BadCertificate"),
        (.badCertificateEnvironment, "BadCertificateEnvironment"), (.expiredProviderToken, "ExpiredProviderToken"),
        (.forbidden, "Forbidden"), (.invalidProviderToken, "InvalidProviderToken"), (.missingProviderToken, "MissingProviderToken"),
        (.unrelatedKeyIDInToken, "UnrelatedKeyIdInToken"), (.badPath, "BadPath"), (.methodNotAllowed, "MethodNotAllowed"),
        (.expiredToken, "ExpiredToken"), (.unregistered, "Unregistered"), (.payloadTooLarge, "PayloadTooLarge"),
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates"), (.tooManyRequests, "TooManyRequests"),
        (.internalServerError, "InternalServerError"), (.serviceUnavailable, "ServiceUnavailable"), (.shutdown, "Shutdown"),
    ]

    public init(rawValue: String) {
        self = Self.names.first { $0.1 == rawValue }?.0 ?? .unknown(rawValue)
    }

    public var rawValue: String {
        if case .unknown(let raw) = self { return raw }
        return Self.names.first { $0.0 == self }!.1
    }

    public var description: String { rawValue }

    /// The device token is dead or wrong for this app: stop using it.
    public var invalidatesDeviceToken: Bool {
        [.unregistered, .badDeviceToken, .deviceTokenNotForTopic, .expiredToken].contains(self)
    }
}
