import DiscordREST
import Foundation

/// What an application answers to an interaction (`POST /interactions/{id}/{token}/callback`),
/// read from the body before the interaction is looked at.
enum InteractionCallback: Sendable {
    /// 4 CHANNEL_MESSAGE_WITH_SOURCE.
    case message(NewMessage)
    /// 5 DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: a loading message, its content given later.
    case deferred(flags: Int)
    /// 6 DEFERRED_UPDATE_MESSAGE and 7 UPDATE_MESSAGE: for component interactions only.
    case componentUpdate(type: Int)
    /// 8 APPLICATION_COMMAND_AUTOCOMPLETE_RESULT.
    case choices([(name: String, value: JSON)])

    static let ephemeral = 64
    static let loading = 128

    var type: Int {
        switch self {
        case .message: 4
        case .deferred: 5
        case .componentUpdate(let type): type
        case .choices: 8
        }
    }

    /// The callback types an interaction of `interactionType` may get, as Discord allows them.
    static func allowedTypes(for interactionType: Int) -> [Int] {
        interactionType == 4 ? [8] : [4, 5, 9]
    }

    init(_ body: RESTBody, ids: SnowflakeGenerator, maxFileSize: Int) throws(DiscordFailure) {
        let object = body.object
        guard let type = object["type"]?.intValue else {
            throw .invalidForm(["type"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        let data = object["data"]?.objectValue ?? [:]
        switch type {
        case 4:
            self = .message(try Self.message(data, files: body.files, path: ["data"], ids: ids, maxFileSize: maxFileSize))
        case 5:
            self = .deferred(flags: (data["flags"]?.intValue ?? 0) & Self.ephemeral)
        case 6, 7:
            self = .componentUpdate(type: type)
        case 8:
            self = .choices(try Self.choices(data["choices"]))
        case 9:
            throw DiscordFailure(status: 400, code: 0, message: "The emulator does not support modals (callback type 9).")
        default:
            throw .invalidForm(["type"], code: "BASE_TYPE_CHOICES", message: "Value must be one of {4, 5, 6, 7, 8, 9}.")
        }
    }

    /// A message body of an interaction's answer or follow-up: a message, plus `flags` (64 ephemeral).
    static func message(
        _ object: [String: JSON], files: [MultipartForm.Part], path: [String], ids: SnowflakeGenerator, maxFileSize: Int
    ) throws(DiscordFailure) -> NewMessage {
        var withoutNonce = object
        withoutNonce.removeValue(forKey: "nonce")
        var message = try RESTPayloads.newMessage(withoutNonce, files: files, path: path, ids: ids, maxFileSize: maxFileSize)
        message.flags = (object["flags"]?.intValue ?? 0) & (ephemeral | 4 | 4096)
        return message
    }

    private static func choices(_ value: JSON?) throws(DiscordFailure) -> [(name: String, value: JSON)] {
        let items = value?.arrayValue ?? []
        guard items.count <= 25 else {
            throw .invalidForm(["data", "choices"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 25 or fewer in length.")
        }
        return try items.enumerated().map { (index, choice) throws(DiscordFailure) in
            guard let name = choice["name"]?.stringValue, (1...100).contains(name.count) else {
                throw .invalidForm(
                    ["data", "choices", String(index), "name"], code: "BASE_TYPE_BAD_LENGTH",
                    message: "Must be between 1 and 100 in length.")
            }
            guard let value = choice["value"], value.stringValue != nil || value.doubleValue != nil else {
                throw .invalidForm(
                    ["data", "choices", String(index), "value"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
            }
            return (name, value)
        }
    }
}
