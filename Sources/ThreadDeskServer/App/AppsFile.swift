import Foundation
import ThreadDeskCore
import ThreadDeskSettings

/// `APPS_FILE`: the apps a deployment serves, as JSON, `{"apps": [ … ]}`. Read whole and checked
/// whole: every unknown field, missing or malformed value, and id, key or forum used twice is
/// named at once, with the app it belongs to, and nothing starts.
public enum AppsFile {
    /// The fields an app may have; any other is refused (a typo must not pass for a default).
    static let fields: Set<String> = [
        "id", "name", "appKey", "appKeyFile", "guildID", "forumChannelID", "faqChannelID", "defaultTagID", "identitySecret", "legacyAPIKey", "apns",
        "appAttest", "supportHours", "awayMessage", "assist", "limits", "webhooks",
    ]
    static let apnsFields: Set<String> = ["topic"]
    static let attestFields: Set<String> = ["bundleIDs"]
    /// Past this the file is refused unread (it is a list of apps, not a database).
    static let maxBytes = 1 << 20

    /// Reads the file at `path`.
    /// - Parameter guildID: The deployment's guild (`DISCORD_GUILD_ID`), for apps that name none.
    public static func read(path: String, guildID: String?) throws(ConfigurationProblem) -> [AppSettings] {
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? Int, size > maxBytes {
                throw ConfigurationProblem(missing: [], invalid: ["APPS_FILE (larger than 1 MiB)"])
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let problem as ConfigurationProblem {
            throw problem
        } catch {
            throw ConfigurationProblem(missing: [], invalid: ["APPS_FILE (unreadable: \(path))"])
        }
        return try parse(data, guildID: guildID, relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent())
    }

    /// Reads the file's content. `appKeyFile` paths are relative to `directory`.
    public static func parse(_ data: Data, guildID: String?, relativeTo directory: URL) throws(ConfigurationProblem) -> [AppSettings] {
        var problems: [String] = []
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationProblem(missing: [], invalid: ["APPS_FILE (not a JSON object: {\"apps\": [ … ]})"])
        }
        for key in root.keys.sorted() where key != "apps" { problems.append("APPS_FILE: unknown field \"\(key)\"") }
        guard let list = root["apps"] as? [Any], !list.isEmpty else {
            problems.append("APPS_FILE: \"apps\" (a list of at least one app)")
            throw ConfigurationProblem(missing: [], invalid: problems)
        }
        var apps: [AppSettings] = []
        for (index, entry) in list.enumerated() {
            var reader = EntryReader(index: index, guildID: guildID, directory: directory)
            if let app = reader.read(entry) { apps.append(app) }
            problems += reader.problems
        }
        problems += duplicates(apps)
        guard problems.isEmpty else { throw ConfigurationProblem(missing: [], invalid: problems) }
        return apps
    }

    /// Ids, keys (app and legacy, across both) and forums used by more than one app.
    private static func duplicates(_ apps: [AppSettings]) -> [String] {
        var problems: [String] = []
        func twice<Value: Hashable>(_ what: String, _ value: (AppSettings) -> Value?, shown: (Value) -> String) {
            var seen: [Value: AppID] = [:]
            for app in apps {
                guard let found = value(app) else { continue }
                if let first = seen[found] {
                    problems.append("APPS_FILE: apps \"\(first)\" and \"\(app.id)\" have the same \(what)\(shown(found))")
                } else {
                    seen[found] = app.id
                }
            }
        }
        twice("id", { $0.id }, shown: { _ in "" })
        twice("appKey", { $0.appKey }, shown: { _ in "" })
        twice("forumChannelID", { $0.forumChannelID }, shown: { " (\($0))" })
        twice("faqChannelID", { $0.faqChannelID }, shown: { " (\($0))" })
        let forums = Set(apps.map(\.forumChannelID))
        for app in apps where app.faqChannelID.map(forums.contains) == true {
            problems.append("APPS_FILE: app \"\(app.id)\": its faqChannelID is another app's support forum")
        }
        twice("legacyAPIKey", { $0.legacyAPIKey }, shown: { _ in "" })
        // One secret for two apps would let a user of one, with the hash their app's backend gave
        // them, open the account of the same id in the other.
        twice("identitySecret", { $0.identitySecret }, shown: { _ in "" })
        twice("apns.topic", { $0.apnsTopic }, shown: { " (\($0))" })
        let appKeys = Set(apps.map(\.appKey))
        for app in apps where app.legacyAPIKey.map(appKeys.contains) == true {
            problems.append("APPS_FILE: app \"\(app.id)\": its legacyAPIKey is an appKey")
        }
        return problems
    }

    /// One entry of the list, its problems named with its place and id.
    private struct EntryReader {
        let index: Int
        let guildID: String?
        let directory: URL
        var problems: [String] = []
        private var label: String

        init(index: Int, guildID: String?, directory: URL) {
            (self.index, self.guildID, self.directory) = (index, guildID, directory)
            label = "apps[\(index)]"
        }

        private mutating func problem(_ text: String) { problems.append("APPS_FILE \(label): \(text)") }

        mutating func read(_ entry: Any) -> AppSettings? {
            guard let fields = entry as? [String: Any] else {
                problem("not an object")
                return nil
            }
            let rawID = fields["id"] as? String
            let id = rawID.flatMap(AppID.init)
            if let rawID { label += " (\"\(rawID)\")" }
            for key in fields.keys.sorted() where !AppsFile.fields.contains(key) { problem("unknown field \"\(key)\"") }
            if id == nil { problem(rawID == nil ? "id missing" : "id (a slug: 1–32 of a-z, 0-9 and -)") }
            let name = string(fields, "name") ?? rawID ?? ""
            if !(1...80).contains(name.count) { problem("name (1–80 characters)") }
            let key = appKey(fields)
            let forum = snowflake(fields, "forumChannelID", required: true)
            let guild = snowflake(fields, "guildID", required: false) ?? guildID
            if guild == nil { problem("guildID missing (and no DISCORD_GUILD_ID)") }
            var app = AppSettings(id: id ?? .default, name: name, appKey: key ?? "", guildID: guild ?? "", forumChannelID: forum ?? "")
            app.defaultTagID = snowflake(fields, "defaultTagID", required: false)
            app.faqChannelID = snowflake(fields, "faqChannelID", required: false)
            if let faq = app.faqChannelID, faq == forum { problem("faqChannelID (a forum of its own, not the support forum)") }
            app.identitySecret = string(fields, "identitySecret")
            if let secret = app.identitySecret, secret.utf8.count < ServerConfiguration.minimumSecretLength {
                problem("identitySecret (at least \(ServerConfiguration.minimumSecretLength) characters: it signs every user id)")
            }
            app.legacyAPIKey = string(fields, "legacyAPIKey")
            if let apns = fields["apns"] {
                if let apns = apns as? [String: Any] {
                    for key in apns.keys.sorted() where !AppsFile.apnsFields.contains(key) { problem("unknown field \"apns.\(key)\"") }
                    app.apnsTopic = string(apns, "topic", shown: "apns.topic")
                    if apns["topic"] == nil { problem("apns.topic missing") }
                } else {
                    problem("apns (an object: {\"topic\": \"com.example.app\"})")
                }
            }
            if let attest = fields["appAttest"] {
                let bundleIDs = (attest as? [String: Any])?["bundleIDs"] as? [String]
                if let attest = attest as? [String: Any] {
                    for key in attest.keys.sorted() where !AppsFile.attestFields.contains(key) { problem("unknown field \"appAttest.\(key)\"") }
                }
                if let bundleIDs, !bundleIDs.isEmpty, bundleIDs.allSatisfy(AppAttestSettings.isBundleID) {
                    app.attestBundleIDs = bundleIDs
                } else {
                    problem("appAttest (an object: {\"bundleIDs\": [\"com.example.app\"]})")
                }
            }
            if let hours = string(fields, "supportHours") {
                do {
                    app.supportHours = try SupportHours(hours)
                } catch {
                    problem("supportHours (a time zone and weekly hours: Europe/Berlin Mon-Fri 09:00-17:00)")
                }
            }
            app.awayMessage = string(fields, "awayMessage")
            if let message = app.awayMessage, message.utf16.count > 1900 { problem("awayMessage (at most 1900 characters)") }
            if let assist = fields["assist"] {
                app.assist = AssistOverrides.read(assist, relativeTo: directory) { problem($0) }
            }
            if let limits = fields["limits"] { app.limits = read(limits: limits) }
            if let hooks = fields["webhooks"] { app.webhooks = WebhookTarget.read(hooks, relativeTo: directory) { problem($0) } }
            guard id != nil, key != nil, forum != nil, guild != nil else { return nil }
            return app
        }

        /// `limits`: whole numbers of 1 or more, each optional.
        private mutating func read(limits: Any) -> AppLimits? {
            guard let fields = limits as? [String: Any] else {
                problem("limits (an object: {\"threadsPerHour\": 50, \"streams\": 2000})")
                return nil
            }
            for key in fields.keys.sorted() where !AppLimits.fields.contains(key) { problem("unknown field \"limits.\(key)\"") }
            func count(_ name: String) -> Int? {
                guard let value = fields[name] else { return nil }
                // A JSON true is an NSNumber too (of type "c"): it is no count.
                guard let number = value as? NSNumber, String(cString: number.objCType) != "c", let count = Int(exactly: number.doubleValue), count >= 1
                else {
                    problem("limits.\(name) (a whole number, 1 or more)")
                    return nil
                }
                return count
            }
            return AppLimits(threadsPerHour: count("threadsPerHour"), streams: count("streams"))
        }

        /// `appKey`, or the content of `appKeyFile` (trimmed), one of the two.
        private mutating func appKey(_ fields: [String: Any]) -> String? {
            let inline = string(fields, "appKey")
            let path = string(fields, "appKeyFile")
            switch (inline, path) {
            case (nil, nil):
                problem("appKey or appKeyFile missing")
                return nil
            case (.some, .some):
                problem("appKey and appKeyFile both set (one of them)")
                return nil
            case (let key?, nil):
                return checked(key)
            case (nil, let path?):
                let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path)
                guard let content = try? String(contentsOf: url, encoding: .utf8) else {
                    problem("appKeyFile (unreadable: \(path))")
                    return nil
                }
                return checked(content.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }

        private mutating func checked(_ key: String) -> String? {
            guard (16...256).contains(key.utf8.count), key.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                problem("appKey (16–256 printable ASCII characters)")
                return nil
            }
            return key
        }

        /// A non-empty string field; named when it is there but no string.
        private mutating func string(_ fields: [String: Any], _ name: String, shown: String? = nil) -> String? {
            guard let value = fields[name] else { return nil }
            guard let text = value as? String, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                problem("\(shown ?? name) (a non-empty string)")
                return nil
            }
            return text
        }

        private mutating func snowflake(_ fields: [String: Any], _ name: String, required: Bool) -> String? {
            guard fields[name] != nil else {
                if required { problem("\(name) missing") }
                return nil
            }
            guard let text = string(fields, name) else { return nil }
            guard text.allSatisfy({ $0.isASCII && $0.isNumber }), UInt64(text) != nil else {
                problem("\(name) (a Discord id, digits only)")
                return nil
            }
            return text
        }
    }
}
