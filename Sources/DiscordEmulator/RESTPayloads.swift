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
        if let reference = object["message_reference"]?["message_id"], !reference.isNull {
            message.reference = try snowflake(json: reference, field: "message_reference")
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
        if let flags = object["flags"]?.intValue, flags & EmulatedComponents.componentsV2Flag != 0 {
            throw .invalidForm(
                path + ["flags"], code: "MESSAGE_FLAGS_INVALID", message: "Components v2 (flag 1 << 15) are not supported by the emulator.")
        }
        message.components = try EmulatedComponents.components(object["components"], path: path + ["components"]) ?? []
        let hasEmbeds = !(object["embeds"]?.arrayValue ?? []).isEmpty
        let hasStickers = !(object["sticker_ids"]?.arrayValue ?? []).isEmpty
        if message.content.isEmpty && message.attachments.isEmpty && !hasEmbeds && !hasStickers && message.components.isEmpty {
            throw .emptyMessage
        }
        return message
    }

    /// An edit's body (`PATCH` of a message or of `@original`, callback 7's `data`): content of at
    /// most 2000, components checked as a new message's, mentions as they say.
    static func messageEdit(_ object: [String: JSON], path: [String]) throws(DiscordFailure) -> MessageEdit {
        var edit = MessageEdit()
        switch object["content"] {
        case nil, .null?: break
        case .string(let content)?:
            guard content.utf16.count <= 2000 else {
                throw .invalidForm(path + ["content"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length.")
            }
            edit.content = content
        default:
            throw .invalidForm(path + ["content"], code: "BASE_TYPE_STRING", message: "Must be a string.")
        }
        if let flags = object["flags"]?.intValue, flags & EmulatedComponents.componentsV2Flag != 0 {
            throw .invalidForm(
                path + ["flags"], code: "MESSAGE_FLAGS_INVALID", message: "Components v2 (flag 1 << 15) are not supported by the emulator.")
        }
        edit.components = try EmulatedComponents.components(object["components"], path: path + ["components"])
        if let allowed = object["allowed_mentions"], !allowed.isNull {
            try validateAllowedMentions(allowed, path: path + ["allowed_mentions"])
            edit.allowedMentions = allowed
        }
        return edit
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

    /// A snowflake in a request body: Discord takes a JSON string or a number (stock libraries
    /// send numbers). A number past 2^53 is parsed exactly (`JSON.integer`), so it is read exactly too.
    static func snowflake(json value: JSON, field: String) throws(DiscordFailure) -> Snowflake {
        if case .integer(let number) = value, number > 0 { return Snowflake(UInt64(number)) }
        if let number = value.doubleValue, number >= 0, let id = UInt64(exactly: number) {
            return Snowflake(id)
        }
        guard let id = try snowflake(value.stringValue ?? "\(value)", field: field) else { throw .notFound }
        return id
    }

    static func snowflake(_ value: String?, field: String) throws(DiscordFailure) -> Snowflake? {
        guard let value else { return nil }
        guard let id = Snowflake(value) else {
            throw .invalidForm([field], code: "NUMBER_TYPE_COERCE", message: "Value \"\(value)\" is not snowflake.")
        }
        return id
    }

    /// A forum's `available_tags` as `PATCH /channels/{forum}` takes them: at most 20, each a
    /// name of 1–20 characters, with the id of an existing tag or none (a new one).
    static func forumTags(_ value: JSON) throws(DiscordFailure) -> [(id: Snowflake?, name: String, moderated: Bool)] {
        guard let tags = value.arrayValue else {
            throw .invalidForm(["available_tags"], code: "BASE_TYPE_LIST", message: "Must be a list.")
        }
        guard tags.count <= 20 else {
            throw .invalidForm(["available_tags"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 20 or fewer in length.")
        }
        return try tags.enumerated().map { (index, tag) throws(DiscordFailure) in
            guard let name = tag["name"]?.stringValue, (1...20).contains(name.count) else {
                throw .invalidForm(
                    ["available_tags", "\(index)", "name"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 20 in length.")
            }
            let id = try tag["id"].flatMap { value throws(DiscordFailure) in
                value == .null ? nil : try snowflake(json: value, field: "available_tags")
            }
            return (id, name, tag["moderated"]?.boolValue ?? false)
        }
    }
}
