/// `PUT /v1/push-token`.
public struct PushTokenRequest: Sendable, Codable, Hashable {
    /// The APNs device token in hex.
    public var token: String
    /// `production` or `development` (see ``PushEnvironmentName``).
    public var environment: String

    public init(token: String, environment: PushEnvironmentName) {
        self.token = token
        self.environment = environment.rawValue
    }
}

/// Which APNs environment a device token belongs to.
public enum PushEnvironmentName: String, Sendable, Hashable, Codable, CaseIterable {
    /// App Store and TestFlight builds.
    case production
    /// Builds signed for development (run from Xcode).
    case development
}

/// The answer to `PUT /v1/installation`.
public struct InstallationResult: Sendable, Codable, Hashable {
    /// Whether a device-info note was posted (or queued until the thread exists).
    public var changed: Bool
    public init(changed: Bool) { self.changed = changed }
}

/// The answer to `POST /v1/diagnostics`.
public struct DiagnosticsResult: Sendable, Codable, Hashable {
    /// The name of the file support sees in Discord.
    public var filename: String
    public var size: Int
    /// The Discord message holding the file (a note: the user never sees it in the chat).
    public var messageId: String

    public init(filename: String, size: Int, messageId: String) {
        self.filename = filename
        self.size = size
        self.messageId = messageId
    }
}

/// What a ThreadDesk push notification carries besides `aps`.
public enum PushPayload {
    /// The id of the support message the push announces.
    public static let messageID = "messageId"
    /// The id of the closed conversation a rating push asks the user to rate (such a push names
    /// no message).
    public static let ratingConversationID = "ratingConversationId"
}

/// Header names of the API.
public enum APIHeader {
    public static let appKey = "X-App-Key"
    public static let idempotencyKey = "Idempotency-Key"
    public static let lastEventID = "Last-Event-ID"
    public static let retryAfter = "Retry-After"
}
