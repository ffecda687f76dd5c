import DiscordREST
import Foundation

/// A REST request's body as Discord reads it: JSON, or multipart with `payload_json` and files.
struct RESTBody: Sendable {
    var json: JSON?
    var files: [MultipartForm.Part] = []
    var contentType: String?

    init(data: Data, contentType: String?) throws(DiscordFailure) {
        self.contentType = contentType
        guard !data.isEmpty else { return }
        if let contentType, let boundary = MultipartForm.boundary(contentType: contentType) {
            guard let form = MultipartForm(body: data, boundary: boundary) else {
                throw .invalidForm([], code: "MULTIPART_INVALID", message: "Invalid multipart body.")
            }
            for part in form.parts {
                if part.name == "payload_json" {
                    guard let parsed = try? JSON.parse(part.data) else { throw .invalidJSON }
                    json = parsed
                } else if part.filename != nil {
                    files.append(part)
                }
            }
        } else {
            guard let parsed = try? JSON.parse(data) else { throw .invalidJSON }
            json = parsed
        }
    }

    var object: [String: JSON] { json?.objectValue ?? [:] }
}

enum RESTPayloads {
    static let autoArchiveDurations: Set<Int> = [60, 1440, 4320, 10080]

    /// Validates a message-create body (top-level for posts, `message` for forum threads).
    static func newMessage(
        _ object: [String: JSON], files: [MultipartForm.Part], path: [String], ids: SnowflakeGenerator,
        maxFileSize: Int
    ) throws(DiscordFailure) -> NewMessage {
        var message = NewMessage(content: "")
        switch object["content"] {
        case nil, .null?: break
        case .string(let content)?:
            guard content.utf16.count <= 2000 else {
                throw .invalidForm(
                    path + ["content"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length.")
            }
            message.content = content
        default:
            throw .invalidForm(path + ["content"], code: "BASE_TYPE_STRING", message: "Must be a string.")
        }
        switch object["nonce"] {
        case nil, .null?: break
        case .string(let nonce)? where nonce.count <= 25: message.nonce = .string(nonce)
        case .number(let nonce)? where nonce.rounded() == nonce: message.nonce = .number(nonce)
        default:
            throw .invalidForm(path + ["nonce"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 25 or fewer in length.")
        }
        message.enforceNonce = object["enforce_nonce"]?.boolValue ?? false
        if let allowed = object["allowed_mentions"], !allowed.isNull {
            try validateAllowedMentions(allowed, path: path + ["allowed_mentions"])
            message.allowedMentions = allowed
        }
        if let reference = object["message_reference"]?["message_id"]?.stringValue {
            guard let id = Snowflake(reference) else {
                throw .invalidForm(
                    path + ["message_reference", "message_id"], code: "NUMBER_TYPE_COERCE",
                    message: "Value \"\(reference)\" is not snowflake.")
            }
            message.reference = id
        }
        let described = object["attachments"]?.arrayValue ?? []
        for (index, file) in files.enumerated() {
            guard file.data.count <= maxFileSize else { throw .requestTooLarge }
            let slot = Self.fileIndex(file.name) ?? index
            let description = described.first { $0["id"]?.intValue == slot || $0["id"]?.stringValue == String(slot) }
            message.attachments.append(
                EmulatedAttachment(
                    id: ids.next(), filename: description?["filename"]?.stringValue ?? file.filename ?? "file",
                    contentType: file.contentType, description: description?["description"]?.stringValue,
                    data: file.data))
        }
        let hasEmbeds = !(object["embeds"]?.arrayValue ?? []).isEmpty
        let hasStickers = !(object["sticker_ids"]?.arrayValue ?? []).isEmpty
        if message.content.isEmpty && message.attachments.isEmpty && !hasEmbeds && !hasStickers {
            throw .emptyMessage
        }
        return message
    }

    private static func validateAllowedMentions(_ allowed: JSON, path: [String]) throws(DiscordFailure) {
        guard let object = allowed.objectValue else {
            throw .invalidForm(path, code: "MODEL_TYPE_CONVERT", message: "Only dictionaries may be used in a ModelType")
        }
        let parse = object["parse"]?.arrayValue ?? []
        for (index, value) in parse.enumerated() {
            guard let kind = value.stringValue, ["users", "roles", "everyone"].contains(kind) else {
                throw .invalidForm(
                    path + ["parse", String(index)], code: "BASE_TYPE_CHOICES",
                    message: "Value must be one of {'users', 'roles', 'everyone'}.")
            }
        }
        let parseKinds = Set(parse.compactMap(\.stringValue))
        for kind in ["users", "roles"] where parseKinds.contains(kind) && !(object[kind]?.arrayValue ?? []).isEmpty {
            throw .invalidForm(
                path, code: "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                message: "parse:[\"\(kind)\"] and \(kind): [ids...] are mutually exclusive.")
        }
    }

    /// `files[3]` → 3; Discord also accepts `file` and `files`.
    private static func fileIndex(_ name: String) -> Int? {
        guard name.hasPrefix("files["), name.hasSuffix("]") else { return nil }
        return Int(name.dropFirst(6).dropLast())
    }

    static func snowflake(_ value: String?, field: String) throws(DiscordFailure) -> Snowflake? {
        guard let value else { return nil }
        guard let id = Snowflake(value) else {
            throw .invalidForm([field], code: "NUMBER_TYPE_COERCE", message: "Value \"\(value)\" is not snowflake.")
        }
        return id
    }
}
