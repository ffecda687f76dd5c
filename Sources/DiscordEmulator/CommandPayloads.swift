import DiscordREST
import Foundation

/// One option of a registered command, as the agent's client offers it.
struct CommandOptionSpec: Sendable, Equatable {
    var type: Int
    var name: String
    var required: Bool
    var autocomplete: Bool
    var options: [CommandOptionSpec]
    /// The option as Discord echoes it back.
    var json: JSON
}

/// A command as a bulk overwrite declares it, checked the way Discord checks it.
struct CommandDefinition: Sendable {
    /// An id the body names: that command keeps it (and may change its name).
    var id: Snowflake?
    var type: Int
    var name: String
    var description: String
    var options: [CommandOptionSpec]
    /// nil: every member may run it; 0: administrators only.
    var defaultMemberPermissions: UInt64?
    /// Everything Discord echoes back but the ids and version, to tell an edit from no change.
    var json: JSON
}

/// The body of `PUT /applications/{application}/guilds/{guild}/commands`, validated in Discord's
/// order with its 50035 form errors (paths such as `0.options.1.name`).
enum CommandPayloads {
    static let optionTypes = 1...11
    /// Chat input, user, message commands (and the primary entry point, which guilds cannot have).
    static let commandTypes = 1...3
    private static let limits = [1: 100, 2: 15, 3: 15]

    static func definitions(_ body: JSON?) throws(DiscordFailure) -> [CommandDefinition] {
        guard let items = body?.arrayValue else {
            throw .invalidForm([], code: "BASE_TYPE_LIST", message: "Must be a list.")
        }
        var definitions: [CommandDefinition] = []
        for (index, item) in items.enumerated() {
            definitions.append(try definition(item, path: [String(index)]))
        }
        for (type, limit) in limits where definitions.count(where: { $0.type == type }) > limit {
            throw DiscordFailure(status: 400, code: 30032, message: "Maximum number of application commands reached")
        }
        var seen = Set<String>()
        for (index, definition) in definitions.enumerated() where !seen.insert("\(definition.type):\(definition.name)").inserted {
            throw .invalidForm(
                [String(index), "name"], code: "APPLICATION_COMMANDS_DUPLICATE_NAME",
                message: "Application command names must be unique")
        }
        return definitions
    }

    private static func definition(_ item: JSON, path: [String]) throws(DiscordFailure) -> CommandDefinition {
        guard let object = item.objectValue else {
            throw .invalidForm(path, code: "MODEL_TYPE_CONVERT", message: "Only dictionaries may be used in a ModelType")
        }
        let type = try integer(object["type"], default: 1, path: path + ["type"])
        guard commandTypes.contains(type) else {
            throw .invalidForm(path + ["type"], code: "BASE_TYPE_CHOICES", message: "Value must be one of {1, 2, 3}.")
        }
        let name = try commandName(object["name"], chatInput: type == 1, path: path + ["name"])
        let description = object["description"]?.stringValue ?? ""
        if type == 1, !(1...100).contains(description.count) {
            throw .invalidForm(path + ["description"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
        }
        if type != 1, !description.isEmpty {
            throw .invalidForm(path + ["description"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 0 or fewer in length.")
        }
        let options = type == 1 ? try optionList(object["options"], level: .command, path: path + ["options"]) : []
        let permissions = try permissionBits(object["default_member_permissions"], path: path + ["default_member_permissions"])
        let contexts = try enumList(object["contexts"], allowed: 0...2, path: path + ["contexts"])
        let integrationTypes = try enumList(object["integration_types"], allowed: 0...1, path: path + ["integration_types"]) ?? [0]
        var json: [String: JSON] = [
            "type": JSON(type), "name": .string(name), "description": .string(description),
            "default_member_permissions": JSON(permissions.map(String.init)),
            "contexts": contexts.map { .array($0.map { JSON($0) }) } ?? .null,
            "integration_types": .array(integrationTypes.map { JSON($0) }),
            "nsfw": .bool(object["nsfw"]?.boolValue ?? false),
            "name_localizations": object["name_localizations"] ?? .null,
            "description_localizations": object["description_localizations"] ?? .null,
        ]
        if !options.isEmpty { json["options"] = .array(options.map(\.json)) }
        let id = try object["id"].flatMap { value throws(DiscordFailure) in
            value.isNull ? nil : try RESTPayloads.snowflake(json: value, field: "id")
        }
        return CommandDefinition(
            id: id, type: type, name: name, description: description, options: options,
            defaultMemberPermissions: permissions, json: .object(json))
    }

    /// Where an option list sits: subcommands may only sit at the top or inside a group.
    private enum Level { case command, group, subcommand }

    private static func optionList(_ value: JSON?, level: Level, path: [String]) throws(DiscordFailure) -> [CommandOptionSpec] {
        guard let value, !value.isNull else { return [] }
        guard let items = value.arrayValue else {
            throw .invalidForm(path, code: "BASE_TYPE_LIST", message: "Must be a list.")
        }
        guard items.count <= 25 else {
            throw .invalidForm(path, code: "BASE_TYPE_MAX_LENGTH", message: "Must be 25 or fewer in length.")
        }
        var options: [CommandOptionSpec] = []
        for (index, item) in items.enumerated() {
            options.append(try option(item, level: level, path: path + [String(index)]))
        }
        let nesting = options.filter { $0.type <= 2 }
        let allowed: Bool =
            switch level {
            case .command: nesting.isEmpty || nesting.count == options.count
            case .group: nesting.count == options.count && options.allSatisfy { $0.type == 1 }
            case .subcommand: nesting.isEmpty
            }
        guard allowed else {
            throw .invalidForm(
                path, code: "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID",
                message: "Sub-command and sub-command group option types are mutually exclusive to all other types")
        }
        if let firstOptional = options.firstIndex(where: { !$0.required }),
            options[firstOptional...].contains(where: \.required)
        {
            throw .invalidForm(
                path, code: "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                message: "Required options must be placed before non-required options")
        }
        var names = Set<String>()
        for (index, option) in options.enumerated() where !names.insert(option.name).inserted {
            throw .invalidForm(
                path + [String(index), "name"], code: "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS",
                message: "Option names must be unique")
        }
        return options
    }

    private static func option(_ item: JSON, level: Level, path: [String]) throws(DiscordFailure) -> CommandOptionSpec {
        guard var object = item.objectValue else {
            throw .invalidForm(path, code: "MODEL_TYPE_CONVERT", message: "Only dictionaries may be used in a ModelType")
        }
        guard let type = object["type"]?.intValue, optionTypes.contains(type) else {
            throw .invalidForm(
                path + ["type"], code: "BASE_TYPE_CHOICES", message: "Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}.")
        }
        let name = try commandName(object["name"], chatInput: true, path: path + ["name"])
        guard let description = object["description"]?.stringValue, (1...100).contains(description.count) else {
            throw .invalidForm(path + ["description"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
        }
        let required = object["required"]?.boolValue ?? false
        let autocomplete = object["autocomplete"]?.boolValue ?? false
        let choices = object["choices"]?.arrayValue ?? []
        guard choices.count <= 25 else {
            throw .invalidForm(path + ["choices"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 25 or fewer in length.")
        }
        if autocomplete && ![3, 4, 10].contains(type) {
            throw .invalidForm(
                path + ["autocomplete"], code: "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_TYPE_INVALID",
                message: "Autocomplete is only for string, integer and number options")
        }
        if autocomplete && !choices.isEmpty {
            throw .invalidForm(
                path + ["autocomplete"], code: "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_CHOICES",
                message: "Autocomplete and choices are mutually exclusive")
        }
        for (index, choice) in choices.enumerated() {
            guard let choiceName = choice["name"]?.stringValue, (1...100).contains(choiceName.count) else {
                throw .invalidForm(
                    path + ["choices", String(index), "name"], code: "BASE_TYPE_BAD_LENGTH",
                    message: "Must be between 1 and 100 in length.")
            }
            let fits = type == 3 ? choice["value"]?.stringValue != nil : choice["value"]?.doubleValue != nil
            guard fits else {
                throw .invalidForm(
                    path + ["choices", String(index), "value"], code: type == 3 ? "BASE_TYPE_STRING" : "NUMBER_TYPE_COERCE",
                    message: type == 3 ? "Must be a string." : "Value is not a number.")
            }
        }
        let inner: Level = type == 1 ? .subcommand : .group
        let options = type <= 2 ? try optionList(object["options"], level: inner, path: path + ["options"]) : []
        object["name"] = .string(name)
        object.removeValue(forKey: "options")
        if !options.isEmpty { object["options"] = .array(options.map(\.json)) }
        if choices.isEmpty { object.removeValue(forKey: "choices") }
        if !required { object.removeValue(forKey: "required") }
        return CommandOptionSpec(
            type: type, name: name, required: required, autocomplete: autocomplete, options: options, json: .object(object))
    }

    /// Chat input names (commands and options) match `^[-_\p{L}\p{N}]{1,32}$` and are lowercase;
    /// user and message commands may be any 1–32 characters.
    private static func commandName(_ value: JSON?, chatInput: Bool, path: [String]) throws(DiscordFailure) -> String {
        guard let value, !value.isNull else {
            throw .invalidForm(path, code: "BASE_TYPE_REQUIRED", message: "This field is required")
        }
        guard let name = value.stringValue, (1...32).contains(name.unicodeScalars.count) else {
            throw .invalidForm(path, code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 32 in length.")
        }
        guard chatInput else { return name }
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar == "-" || scalar == "_" || scalar.properties.generalCategory.isLetterOrNumber
        }
        guard allowed, name == name.lowercased() else {
            throw .invalidForm(path, code: "APPLICATION_COMMAND_INVALID_NAME", message: "Command name is invalid")
        }
        return name
    }

    /// A permission bitfield: Discord documents a string, its schema an integer; both are read.
    private static func permissionBits(_ value: JSON?, path: [String]) throws(DiscordFailure) -> UInt64? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let bits = UInt64(text) else {
                throw .invalidForm(path, code: "NUMBER_TYPE_COERCE", message: "Value \"\(text)\" is not int.")
            }
            return bits
        case .number(let number)? where number >= 0 && number.rounded() == number && number < 9_007_199_254_740_992:
            return UInt64(number)
        default:
            throw .invalidForm(path, code: "NUMBER_TYPE_COERCE", message: "Value is not int.")
        }
    }

    private static func integer(_ value: JSON?, default fallback: Int, path: [String]) throws(DiscordFailure) -> Int {
        guard let value, !value.isNull else { return fallback }
        guard let number = value.intValue else {
            throw .invalidForm(path, code: "NUMBER_TYPE_COERCE", message: "Value is not int.")
        }
        return number
    }

    private static func enumList(_ value: JSON?, allowed: ClosedRange<Int>, path: [String]) throws(DiscordFailure) -> [Int]? {
        guard let value, !value.isNull else { return nil }
        guard let items = value.arrayValue, !items.isEmpty else {
            throw .invalidForm(path, code: "BASE_TYPE_MIN_LENGTH", message: "Must be 1 or more in length.")
        }
        var result: [Int] = []
        for (index, item) in items.enumerated() {
            guard let number = item.intValue, allowed.contains(number) else {
                let choices = allowed.map(String.init).joined(separator: ", ")
                throw .invalidForm(path + [String(index)], code: "BASE_TYPE_CHOICES", message: "Value must be one of {\(choices)}.")
            }
            if !result.contains(number) { result.append(number) }
        }
        return result
    }
}

extension Unicode.GeneralCategory {
    /// `\p{L}` or `\p{N}`.
    var isLetterOrNumber: Bool {
        switch self {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber:
            true
        default: false
        }
    }
}
