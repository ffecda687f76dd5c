/// An error exactly as Discord's REST API reports it: HTTP status, JSON code, message, and for
/// form errors the nested `errors` tree with `_errors` leaves.
public struct DiscordFailure: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: Int
    public var message: String
    public var errors: JSON?

    public var description: String { "Discord \(status) (\(code)): \(message)" }

    var json: JSON {
        var object: [String: JSON] = ["code": JSON(code), "message": .string(message)]
        if let errors { object["errors"] = errors }
        return .object(object)
    }

    static let unauthorized = DiscordFailure(status: 401, code: 0, message: "401: Unauthorized")
    static let unknownChannel = DiscordFailure(status: 404, code: 10003, message: "Unknown Channel")
    static let unknownGuild = DiscordFailure(status: 404, code: 10004, message: "Unknown Guild")
    static let unknownMember = DiscordFailure(status: 404, code: 10007, message: "Unknown Member")
    static let unknownMessage = DiscordFailure(status: 404, code: 10008, message: "Unknown Message")
    static let unknownEmoji = DiscordFailure(status: 400, code: 10014, message: "Unknown Emoji")
    static let notFound = DiscordFailure(status: 404, code: 0, message: "404: Not Found")
    static let methodNotAllowed = DiscordFailure(status: 405, code: 0, message: "405: Method Not Allowed")
    static let tagRequired = DiscordFailure(
        status: 400, code: 40067, message: "A tag is required to create a forum post in this channel")
    static let requestTooLarge = DiscordFailure(status: 413, code: 40005, message: "Request entity too large")
    static let emptyMessage = DiscordFailure(status: 400, code: 50006, message: "Cannot send an empty message")
    static let nonTextChannel = DiscordFailure(
        status: 403, code: 50008, message: "Cannot send messages in a non-text channel")
    static let wrongChannelType = DiscordFailure(
        status: 400, code: 50024, message: "Cannot execute action on this channel type")
    static let cannotEditOthers = DiscordFailure(
        status: 403, code: 50005, message: "Cannot edit a message authored by another user")
    static let archivedThread = DiscordFailure(
        status: 400, code: 50083, message: "Thread is archived")
    static let lockedThread = DiscordFailure(status: 403, code: 160005, message: "Thread is locked")
    static let tooManyActiveThreads = DiscordFailure(status: 400, code: 160006, message: "Maximum number of active threads reached")
    static let unknownApplication = DiscordFailure(status: 404, code: 10002, message: "Unknown Application")
    static let unknownRole = DiscordFailure(status: 404, code: 10011, message: "Unknown Role")
    static let unknownWebhook = DiscordFailure(status: 404, code: 10015, message: "Unknown Webhook")
    static let unknownInteraction = DiscordFailure(status: 404, code: 10062, message: "Unknown interaction")
    static let unknownCommand = DiscordFailure(status: 404, code: 10063, message: "Unknown application command")
    static let dailyCommandCreates = DiscordFailure(
        status: 400, code: 30034, message: "Max number of daily application command creates has been reached (200)")
    static let tooManyWebhooks = DiscordFailure(status: 400, code: 30007, message: "Maximum number of webhooks reached (15)")
    static let alreadyAcknowledged = DiscordFailure(
        status: 400, code: 40060, message: "Interaction has already been acknowledged")
    static let missingPermissions = DiscordFailure(
        status: 403, code: 50013, message: "Missing Permissions")
    static let invalidWebhookToken = DiscordFailure(status: 401, code: 50027, message: "Invalid Webhook Token")
    static let forumWebhookNeedsThread = DiscordFailure(
        status: 400, code: 220001, message: "Webhooks posted to forum channels must have a thread_name or thread_id")
    static let forumWebhookThreadNameAndID = DiscordFailure(
        status: 400, code: 220002, message: "Webhooks posted to forum channels cannot have both a thread_name and thread_id")
    static let webhookThreadNameOutsideForum = DiscordFailure(
        status: 400, code: 220003, message: "Webhooks can only create threads in forum channels")
    static let invalidJSON = DiscordFailure(
        status: 400, code: 50109, message: "The request body contains invalid JSON.")

    /// 50035 with one field error, shaped as Discord nests it (`{"content": {"_errors": [...]}}`).
    static func invalidForm(_ path: [String], code: String, message: String) -> DiscordFailure {
        var tree: JSON = ["_errors": [["code": .string(code), "message": .string(message)]]]
        for key in path.reversed() { tree = [key: tree] }
        return DiscordFailure(status: 400, code: 50035, message: "Invalid Form Body", errors: tree)
    }
}
