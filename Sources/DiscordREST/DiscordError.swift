/// Discord's JSON error codes that ThreadDesk reacts to; anything else is kept as `unknown`.
public enum DiscordErrorCode: Sendable, Hashable {
    case general
    case unknownChannel
    case unknownGuild
    case unknownMessage
    case unknownEmoji
    case requestTooLarge
    case tagRequired
    case missingAccess
    case cannotEditOthers
    case emptyMessage
    case nonTextChannel
    case missingPermissions
    case wrongChannelType
    case invalidFormBody
    case fileTooLarge
    case threadArchived
    case invalidJSON
    case threadLocked
    case maximumActiveThreads
    case unknownWebhook
    case unknownInteraction
    case alreadyAcknowledged
    case invalidWebhookToken
    case unknown(Int)

    private static let known: [(DiscordErrorCode, Int)] = [
        (.general, 0), (.unknownChannel, 10003), (.unknownGuild, 10004), (.unknownMessage, 10008),
        (.unknownEmoji, 10014), (.requestTooLarge, 40005), (.tagRequired, 40067), (.missingAccess, 50001),
        (.cannotEditOthers, 50005), (.emptyMessage, 50006), (.nonTextChannel, 50008), (.missingPermissions, 50013),
        (.wrongChannelType, 50024), (.invalidFormBody, 50035), (.fileTooLarge, 50045), (.threadArchived, 50083),
        (.invalidJSON, 50109), (.threadLocked, 160005), (.maximumActiveThreads, 160006),
        (.unknownWebhook, 10015), (.unknownInteraction, 10062), (.alreadyAcknowledged, 40060), (.invalidWebhookToken, 50027),
    ]

    public init(rawValue: Int) {
        self = Self.known.first { $0.1 == rawValue }?.0 ?? .unknown(rawValue)
    }

    public var rawValue: Int {
        if case .unknown(let value) = self { return value }
        return Self.known.first { $0.0 == self }!.1
    }
}

/// An error answer from Discord: its HTTP status, code, message and, for form errors, the
/// `errors` tree as raw JSON text.
public struct DiscordAPIError: Error, Sendable, CustomStringConvertible {
    public let status: Int
    public let code: DiscordErrorCode
    public let message: String
    public let errors: String?

    public var description: String { "Discord answered \(status), code \(code.rawValue): \(message)" }

    /// The thread can no longer take posts: deleted (10003), archived and locked (50083) or locked (160005).
    public var threadIsGone: Bool { code == .unknownChannel }
    public var threadIsLocked: Bool { code == .threadArchived || code == .threadLocked }
}

/// Why a call to Discord failed.
public enum DiscordError: Error, Sendable, CustomStringConvertible {
    /// Discord refused the request.
    case api(DiscordAPIError)
    /// Sending would mean waiting past the call's time budget for a rate limit to reset.
    case rateLimited(retryAfter: Duration)
    /// Server errors or connection failures until the time budget ran out.
    case unavailable(attempts: Int, lastProblem: String)
    /// Discord answered with something this client cannot read.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .api(let error): error.description
        case .rateLimited(let retryAfter): "Discord rate limit: would have to wait \(retryAfter)"
        case .unavailable(let attempts, let problem): "Discord unavailable after \(attempts) attempts: \(problem)"
        case .invalidResponse(let problem): "Unreadable answer from Discord: \(problem)"
        }
    }

    public var apiError: DiscordAPIError? {
        if case .api(let error) = self { return error }
        return nil
    }
}
