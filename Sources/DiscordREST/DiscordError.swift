/// Discord's JSON error code (`code` in an error answer), with a name for each code ThreadDesk
/// reacts to. Extensible like the SDK's `ErrorCode`: a code without a name arrives as itself
/// (compare it with `DiscordErrorCode(rawValue:)`), and naming one breaks no `switch`.
public struct DiscordErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A general error (no code of its own).
    public static let general = DiscordErrorCode(rawValue: 0)
    /// The channel or thread is gone.
    public static let unknownChannel = DiscordErrorCode(rawValue: 10003)
    public static let unknownGuild = DiscordErrorCode(rawValue: 10004)
    public static let unknownMessage = DiscordErrorCode(rawValue: 10008)
    public static let unknownEmoji = DiscordErrorCode(rawValue: 10014)
    /// The request (its files) is larger than Discord takes.
    public static let requestTooLarge = DiscordErrorCode(rawValue: 40005)
    /// The forum requires a tag on every post.
    public static let tagRequired = DiscordErrorCode(rawValue: 40067)
    public static let missingAccess = DiscordErrorCode(rawValue: 50001)
    /// A message of another author cannot be edited.
    public static let cannotEditOthers = DiscordErrorCode(rawValue: 50005)
    public static let emptyMessage = DiscordErrorCode(rawValue: 50006)
    /// The channel takes no messages (a forum itself, say).
    public static let nonTextChannel = DiscordErrorCode(rawValue: 50008)
    public static let missingPermissions = DiscordErrorCode(rawValue: 50013)
    public static let wrongChannelType = DiscordErrorCode(rawValue: 50024)
    /// The body broke a rule of the form (the `errors` tree says which).
    public static let invalidFormBody = DiscordErrorCode(rawValue: 50035)
    public static let fileTooLarge = DiscordErrorCode(rawValue: 50045)
    /// The thread is archived and locked.
    public static let threadArchived = DiscordErrorCode(rawValue: 50083)
    public static let invalidJSON = DiscordErrorCode(rawValue: 50109)
    /// The thread is locked.
    public static let threadLocked = DiscordErrorCode(rawValue: 160005)
    /// The forum has as many active threads as Discord allows.
    public static let maximumActiveThreads = DiscordErrorCode(rawValue: 160006)
    public static let unknownWebhook = DiscordErrorCode(rawValue: 10015)
    /// The interaction is gone (answered too late).
    public static let unknownInteraction = DiscordErrorCode(rawValue: 10062)
    /// The interaction was answered already.
    public static let alreadyAcknowledged = DiscordErrorCode(rawValue: 40060)
    public static let invalidWebhookToken = DiscordErrorCode(rawValue: 50027)

    public var description: String { String(rawValue) }
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
