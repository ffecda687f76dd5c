import DiscordREST
import Foundation

/// What an application answers to an interaction (`POST /interactions/{id}/{token}/callback`),
/// read from the body before the interaction is looked at.
enum InteractionCallback: Sendable {
    /// 4 CHANNEL_MESSAGE_WITH_SOURCE.
    case message(NewMessage)
    /// 5 DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: a loading message, its content given later.
    case deferred(flags: Int)
    /// 6 DEFERRED_UPDATE_MESSAGE: a click taken, the message left as it is (for now).
    case deferredUpdate
    /// 7 UPDATE_MESSAGE: the clicked message edited at once.
    case update(MessageEdit)
    /// 8 APPLICATION_COMMAND_AUTOCOMPLETE_RESULT.
    case choices([(name: String, value: JSON)])
    /// 9 MODAL: a form shown to the member.
    case modal(EmulatedModal)

    static let ephemeral = 64
    static let loading = 128

    var type: Int {
        switch self {
        case .message: 4
        case .deferred: 5
        case .deferredUpdate: 6
        case .update: 7
        case .choices: 8
        case .modal: 9
        }
    }

    /// The callback types an interaction may get, as Discord allows them: 6 and 7 only for one
    /// that came from a component (a submit only when its modal was opened from a button), and a
    /// modal never in answer to a modal.
    static func allowedTypes(for interaction: EmulatedInteraction) -> [Int] {
        switch interaction.type {
        case 3: [4, 5, 6, 7, 9]
        case 4: [8]
        case 5: interaction.messageID == nil ? [4, 5] : [4, 5, 6, 7]
        default: [4, 5, 9]
        }
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
        case 6:
            self = .deferredUpdate
        case 7:
            self = .update(try RESTPayloads.messageEdit(data, path: ["data"]))
        case 8:
            self = .choices(try Self.choices(data["choices"]))
        case 9:
            self = .modal(try EmulatedComponents.modal(data, path: ["data"]))
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
