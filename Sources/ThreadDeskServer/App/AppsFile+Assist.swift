import Foundation

/// An app's `assist` object read from `APPS_FILE`, with the assistant's own rules for each value.
extension AssistOverrides {
    /// Reads the object, naming each problem through `problem` (prefixed `assist.`).
    static func read(_ object: Any, relativeTo directory: URL, problem: (String) -> Void) -> AssistOverrides? {
        guard let fields = object as? [String: Any] else {
            problem("assist (an object: {\"model\": \"…\", \"apiKeyFile\": \"…\"})")
            return nil
        }
        var overrides = AssistOverrides()
        for key in fields.keys.sorted() where !Self.fields.contains(key) { problem("unknown field \"assist.\(key)\"") }
        func bool(_ name: String) -> Bool? {
            guard let value = fields[name] else { return nil }
            // JSONSerialization reads true, false and numbers alike as NSNumber: 0 and 1 must not pass for flags.
            guard let number = value as? NSNumber, Self.isBoolean(number) else {
                problem("assist.\(name) (true or false)")
                return nil
            }
            return number.boolValue
        }
        func string(_ name: String) -> String? {
            guard let value = fields[name] else { return nil }
            guard let text = value as? String, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                problem("assist.\(name) (a non-empty string)")
                return nil
            }
            return text
        }
        func tokens(_ name: String) -> Int? {
            guard let value = fields[name] else { return nil }
            guard let number = value as? NSNumber, !Self.isBoolean(number), let whole = Int(exactly: number.doubleValue), (0...1_000_000_000).contains(whole) else {
                problem("assist.\(name) (whole tokens, 0 for no limit)")
                return nil
            }
            return whole
        }
        overrides.enabled = bool("enabled")
        overrides.drafts = bool("drafts")
        if let url = string("url") {
            if AssistSettings.isProviderURL(url) { overrides.url = AssistSettings.trimmingSlash(url) } else { problem("assist.url (an http or https URL)") }
        }
        if let model = string("model") {
            if AssistSettings.isModel(model) { overrides.model = model } else { problem("assist.model (1–200 characters, no spaces)") }
        }
        if let path = string("apiKeyFile") {
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path)
            switch AssistSettings.readKey(url) {
            case .success(let key): overrides.apiKey = key
            case .failure(let reason): problem("assist.apiKeyFile (\(reason))")
            }
        }
        overrides.tokensPerDay = tokens("tokensPerDay")
        overrides.tokensPerUserPerDay = tokens("tokensPerUserPerDay")
        overrides.tokensPerNetworkPerDay = tokens("tokensPerNetworkPerDay")
        if let value = fields["newUsersShare"] {
            if let number = value as? NSNumber, !Self.isBoolean(number), let whole = Int(exactly: number.doubleValue), (0...100).contains(whole) {
                overrides.newUsersShare = whole
            } else {
                problem("assist.newUsersShare (a whole percentage, 0 to 100)")
            }
        }
        if let mode = fields["auto"] {
            if let text = mode as? String, let auto = AssistAuto(rawValue: text.lowercased()) { overrides.auto = auto } else {
                problem("assist.auto (\"off\" or \"away\")")
            }
        }
        if let value = fields["autoMinimumMatch"] {
            if let number = value as? NSNumber, !Self.isBoolean(number), AssistSettings.isMinimumMatch(number.doubleValue) {
                overrides.autoMinimumMatch = number.doubleValue
            } else {
                problem("assist.autoMinimumMatch (a number from 0 to 1)")
            }
        }
        if let value = fields["name"] {
            if let text = value as? String, let name = AssistSettings.checkedName(text) { overrides.name = name } else {
                problem("assist.name (\(AssistSettings.nameRule))")
            }
        }
        return overrides
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        // On Linux and Darwin alike a JSON true/false is a CFBoolean-backed NSNumber whose
        // objCType is "c"; integers are "q".
        String(cString: number.objCType) == "c"
    }
}
