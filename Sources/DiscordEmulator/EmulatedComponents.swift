import DiscordREST

/// A modal an application opened (callback type 9), as the member's client shows it.
struct EmulatedModal: Sendable {
    struct Input: Sendable {
        var id: Int
        var customID: String
        var label: String
        var style: Int
        var value: String?
        var minLength: Int?
        var maxLength: Int?
        var required: Bool
        var placeholder: String?
        /// The component around it: an action row (type 1) or a label (18), and its id.
        var wrapperType: Int
        var wrapperID: Int
    }

    var customID: String
    var title: String
    var inputs: [Input]
}

/// Message components and modals, checked as Discord checks them (legacy action rows only: each
/// violation is a 50035 naming the field). Components v2 and select menus are refused outright, so
/// that nothing the emulator does not model passes silently.
enum EmulatedComponents {
    static let maxRows = 5
    static let maxButtons = 5
    static let maxModalComponents = 5
    /// Message flag IS_COMPONENTS_V2.
    static let componentsV2Flag = 1 << 15

    /// A message's `components`: nil when absent or null (for an edit: unchanged), else the rows
    /// as the message will show them, each component with its numeric `id`.
    static func components(_ value: JSON?, path: [String]) throws(DiscordFailure) -> [JSON]? {
        guard let value, !value.isNull else { return nil }
        guard let rows = value.arrayValue else { throw .invalidForm(path, code: "BASE_TYPE_LIST", message: "Must be a list.") }
        guard rows.count <= maxRows else {
            throw .invalidForm(path, code: "BASE_TYPE_MAX_LENGTH", message: "Must be \(maxRows) or fewer in length.")
        }
        var customIDs: Set<String> = []
        var checked: [JSON] = []
        for (index, row) in rows.enumerated() {
            checked.append(.object(try actionRow(row, path: path + [String(index)], inModal: false, customIDs: &customIDs)))
        }
        return try numbered(checked, path: path)
    }

    /// An action row: 1–5 buttons in a message, exactly one text input in a modal.
    private static func actionRow(
        _ value: JSON, path: [String], inModal: Bool, customIDs: inout Set<String>
    ) throws(DiscordFailure) -> [String: JSON] {
        let object = try self.object(value, path: path)
        let type = try componentType(object, path: path)
        guard type == 1 else { throw unsupported(type, path: path + ["type"], inModal: inModal) }
        guard let children = object["components"]?.arrayValue else {
            throw .invalidForm(path + ["components"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        let range = inModal ? 1...1 : 1...maxButtons
        guard range.contains(children.count) else {
            throw .invalidForm(
                path + ["components"], code: "BASE_TYPE_BAD_LENGTH",
                message: "Must be between \(range.lowerBound) and \(range.upperBound) in length.")
        }
        var row: [String: JSON] = ["type": 1]
        if let id = object["id"], !id.isNull { row["id"] = id }
        var checked: [JSON] = []
        for (position, child) in children.enumerated() {
            let spot = path + ["components", String(position)]
            let component = inModal ? try textInput(child, path: spot, labelled: false) : try button(child, path: spot)
            if let customID = component["custom_id"]?.stringValue, !customIDs.insert(customID).inserted {
                throw .invalidForm(
                    spot + ["custom_id"], code: "COMPONENT_CUSTOM_ID_DUPLICATED", message: "Component custom id cannot be duplicated")
            }
            checked.append(.object(component))
        }
        row["components"] = .array(checked)
        return row
    }

    /// The `data` of callback type 9.
    static func modal(_ data: [String: JSON], path: [String]) throws(DiscordFailure) -> EmulatedModal {
        let customID = try text(data["custom_id"], path: path + ["custom_id"], range: 1...100, required: true) ?? ""
        let title = try text(data["title"], path: path + ["title"], range: 1...45, required: true) ?? ""
        guard let items = data["components"]?.arrayValue else {
            throw .invalidForm(path + ["components"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        guard (1...maxModalComponents).contains(items.count) else {
            throw .invalidForm(path + ["components"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and \(maxModalComponents) in length.")
        }
        // Rows go through the same checks as a message's; labels (type 18) wrap one input each.
        var customIDs: Set<String> = []
        var wrapped: [JSON] = []
        for (index, item) in items.enumerated() {
            let here = path + ["components", String(index)]
            let object = try self.object(item, path: here)
            switch try componentType(object, path: here) {
            case 1:
                wrapped.append(.object(try actionRow(item, path: here, inModal: true, customIDs: &customIDs)))
            case 18:
                var label: [String: JSON] = ["type": 18]
                if let id = object["id"], !id.isNull { label["id"] = id }
                label["label"] = .string(try text(object["label"], path: here + ["label"], range: 1...45, required: true) ?? "")
                if let description = try text(object["description"], path: here + ["description"], range: 1...100, required: false) {
                    label["description"] = .string(description)
                }
                guard let inner = object["component"] else {
                    throw .invalidForm(here + ["component"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
                }
                let input = try textInput(inner, path: here + ["component"], labelled: true)
                if let customID = input["custom_id"]?.stringValue, !customIDs.insert(customID).inserted {
                    throw .invalidForm(
                        here + ["component", "custom_id"], code: "COMPONENT_CUSTOM_ID_DUPLICATED",
                        message: "Component custom id cannot be duplicated")
                }
                label["component"] = .object(input)
                wrapped.append(.object(label))
            case let other:
                throw unsupported(other, path: here + ["type"], inModal: true)
            }
        }
        let inputs = try numbered(wrapped, path: path + ["components"]).map { item in
            let input = item["component"] ?? item["components"]?[0] ?? .null
            return EmulatedModal.Input(
                id: input["id"]?.intValue ?? 0, customID: input["custom_id"]?.stringValue ?? "",
                label: item["label"]?.stringValue ?? input["label"]?.stringValue ?? "", style: input["style"]?.intValue ?? 1,
                value: input["value"]?.stringValue, minLength: input["min_length"]?.intValue, maxLength: input["max_length"]?.intValue,
                required: input["required"]?.boolValue ?? true, placeholder: input["placeholder"]?.stringValue,
                wrapperType: item["type"]?.intValue ?? 1, wrapperID: item["id"]?.intValue ?? 0)
        }
        return EmulatedModal(customID: customID, title: title, inputs: inputs)
    }

    /// A button in a message: styles 1–4 carry a `custom_id` and no `url`, style 5 the reverse.
    private static func button(_ value: JSON, path: [String]) throws(DiscordFailure) -> [String: JSON] {
        let object = try self.object(value, path: path)
        let type = try componentType(object, path: path)
        guard type == 2 else { throw unsupported(type, path: path + ["type"], inModal: false) }
        guard let style = object["style"]?.intValue else {
            throw .invalidForm(path + ["style"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        guard (1...5).contains(style) else {
            let message = style == 6 ? "Premium buttons (style 6) are not supported by the emulator." : "Value must be one of {1, 2, 3, 4, 5, 6}."
            throw .invalidForm(path + ["style"], code: "BASE_TYPE_CHOICES", message: message)
        }
        var button: [String: JSON] = ["type": 2, "style": JSON(style)]
        if let id = object["id"], !id.isNull { button["id"] = id }
        if let label = try text(object["label"], path: path + ["label"], range: 0...80, required: false) { button["label"] = .string(label) }
        let customID = try text(object["custom_id"], path: path + ["custom_id"], range: 1...100, required: false)
        let url = try text(object["url"], path: path + ["url"], range: 1...512, required: false)
        if style == 5 {
            guard let url else { throw .invalidForm(path + ["url"], code: "BUTTON_URL_REQUIRED", message: "A link button requires a url") }
            guard customID == nil else {
                throw .invalidForm(path + ["custom_id"], code: "BUTTON_LINK_CUSTOM_ID", message: "A link button cannot have a custom_id")
            }
            guard url.hasPrefix("https://") || url.hasPrefix("http://") || url.hasPrefix("discord://") else {
                throw .invalidForm(path + ["url"], code: "URL_TYPE_INVALID_URL", message: "Not a well formed URL.")
            }
            button["url"] = .string(url)
        } else {
            guard let customID else {
                throw .invalidForm(path + ["custom_id"], code: "BUTTON_CUSTOM_ID_REQUIRED", message: "A non-link button requires a custom_id")
            }
            guard url == nil else {
                throw .invalidForm(path + ["url"], code: "BUTTON_NON_LINK_URL", message: "A non-link button cannot have a url")
            }
            button["custom_id"] = .string(customID)
        }
        switch object["disabled"] {
        case nil, .null?: break
        case .bool(let disabled)?: button["disabled"] = .bool(disabled)
        default: throw .invalidForm(path + ["disabled"], code: "BASE_TYPE_BOOLEAN", message: "Must be either true or false.")
        }
        if let emoji = object["emoji"], emoji.objectValue != nil { button["emoji"] = emoji }
        return button
    }

    /// A text input of a modal; in a label (`labelled`) its own `label` may be left out.
    private static func textInput(_ value: JSON, path: [String], labelled: Bool) throws(DiscordFailure) -> [String: JSON] {
        let object = try self.object(value, path: path)
        let type = try componentType(object, path: path)
        guard type == 4 else { throw unsupported(type, path: path + ["type"], inModal: true) }
        var input: [String: JSON] = ["type": 4]
        if let id = object["id"], !id.isNull { input["id"] = id }
        input["custom_id"] = .string(try text(object["custom_id"], path: path + ["custom_id"], range: 1...100, required: true) ?? "")
        guard let style = object["style"]?.intValue, [1, 2].contains(style) else {
            throw .invalidForm(path + ["style"], code: "BASE_TYPE_CHOICES", message: "Value must be one of {1, 2}.")
        }
        input["style"] = JSON(style)
        if let label = try text(object["label"], path: path + ["label"], range: 1...45, required: !labelled) { input["label"] = .string(label) }
        if let value = try text(object["value"], path: path + ["value"], range: 0...4000, required: false) { input["value"] = .string(value) }
        if let placeholder = try text(object["placeholder"], path: path + ["placeholder"], range: 0...100, required: false) {
            input["placeholder"] = .string(placeholder)
        }
        let minimum = try integer(object["min_length"], path: path + ["min_length"], range: 0...4000)
        let maximum = try integer(object["max_length"], path: path + ["max_length"], range: 1...4000)
        if let minimum, let maximum, minimum > maximum {
            throw .invalidForm(path + ["min_length"], code: "NUMBER_TYPE_MAX", message: "min_length must not exceed max_length.")
        }
        if let minimum { input["min_length"] = JSON(minimum) }
        if let maximum { input["max_length"] = JSON(maximum) }
        switch object["required"] {
        case nil, .null?: break
        case .bool(let required)?: input["required"] = .bool(required)
        default: throw .invalidForm(path + ["required"], code: "BASE_TYPE_BOOLEAN", message: "Must be either true or false.")
        }
        return input
    }

    /// Gives every component without an `id` (or with 0, which libraries send for "none") the next
    /// one not taken, in document order, as Discord does; an id given twice is refused.
    private static func numbered(_ items: [JSON], path: [String]) throws(DiscordFailure) -> [JSON] {
        var taken: Set<Int> = []
        func collect(_ item: JSON, path: [String]) throws(DiscordFailure) {
            if let id = item["id"], !id.isNull {
                guard let number = id.intValue, (0...Int(Int32.max)).contains(number) else {
                    throw .invalidForm(path + ["id"], code: "NUMBER_TYPE_COERCE", message: "Value is not int32.")
                }
                guard number == 0 || taken.insert(number).inserted else {
                    throw .invalidForm(path + ["id"], code: "COMPONENT_ID_DUPLICATED", message: "Component id cannot be duplicated")
                }
            }
            for (index, child) in (item["components"]?.arrayValue ?? []).enumerated() {
                try collect(child, path: path + ["components", String(index)])
            }
            if let child = item["component"] { try collect(child, path: path + ["component"]) }
        }
        for (index, item) in items.enumerated() { try collect(item, path: path + [String(index)]) }
        var next = 1
        func assign(_ item: JSON) -> JSON {
            guard var object = item.objectValue else { return item }
            if object["id"] == nil || object["id"]?.isNull == true || object["id"]?.intValue == 0 {
                while taken.contains(next) { next += 1 }
                object["id"] = JSON(next)
                taken.insert(next)
            }
            if let children = object["components"]?.arrayValue { object["components"] = .array(children.map(assign)) }
            if let child = object["component"] { object["component"] = assign(child) }
            return .object(object)
        }
        return items.map(assign)
    }

    private static func object(_ value: JSON, path: [String]) throws(DiscordFailure) -> [String: JSON] {
        guard let object = value.objectValue else {
            throw .invalidForm(path, code: "MODEL_TYPE_CONVERT", message: "Only dictionaries may be used in a ModelType")
        }
        return object
    }

    private static func componentType(_ object: [String: JSON], path: [String]) throws(DiscordFailure) -> Int {
        guard let type = object["type"]?.intValue else {
            throw .invalidForm(path + ["type"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        return type
    }

    private static func unsupported(_ type: Int, path: [String], inModal: Bool) -> DiscordFailure {
        let message: String
        switch type {
        case 9...17: message = "Components v2 (type \(type)) are not supported by the emulator."
        case 3, 5, 6, 7, 8: message = "Select menus (type \(type)) are not supported by the emulator."
        case 4 where !inModal: message = "A text input (type 4) belongs in a modal."
        case 2 where inModal: message = "A button (type 2) belongs in a message."
        default: message = "Component type \(type) is not valid here."
        }
        return .invalidForm(path, code: "UNION_TYPE_CHOICES", message: message)
    }

    static func text(_ value: JSON?, path: [String], range: ClosedRange<Int>, required: Bool) throws(DiscordFailure) -> String? {
        switch value {
        case nil, .null?:
            guard !required else { throw .invalidForm(path, code: "BASE_TYPE_REQUIRED", message: "This field is required") }
            return nil
        case .string(let text)?:
            guard range.contains(text.utf16.count) else {
                throw .invalidForm(
                    path, code: range.lowerBound == 0 ? "BASE_TYPE_MAX_LENGTH" : "BASE_TYPE_BAD_LENGTH",
                    message: range.lowerBound == 0
                        ? "Must be \(range.upperBound) or fewer in length." : "Must be between \(range.lowerBound) and \(range.upperBound) in length.")
            }
            return text
        default:
            throw .invalidForm(path, code: "BASE_TYPE_STRING", message: "Must be a string.")
        }
    }

    private static func integer(_ value: JSON?, path: [String], range: ClosedRange<Int>) throws(DiscordFailure) -> Int? {
        guard let value, !value.isNull else { return nil }
        guard let number = value.intValue else { throw .invalidForm(path, code: "NUMBER_TYPE_COERCE", message: "Value is not int.") }
        guard range.contains(number) else {
            throw .invalidForm(
                path, code: number < range.lowerBound ? "NUMBER_TYPE_MIN" : "NUMBER_TYPE_MAX",
                message: "int value should be between \(range.lowerBound) and \(range.upperBound).")
        }
        return number
    }
}

/// An edit of a message's text and buttons (`PATCH` of a message or of `@original`, callback 7):
/// what is nil stays as it is.
struct MessageEdit: Sendable {
    var content: String?
    var components: [JSON]?
    var allowedMentions: JSON?

    var isEmpty: Bool { content == nil && components == nil }

    func apply(to message: inout EmulatedMessage) {
        if let content { message.content = content }
        if let components { message.components = components }
    }
}
