import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// Canned replies, kept per app in the store (one value, written under a job lock so two
/// replicas' edits cannot lose each other's) and filled in with the user's installation info.
struct Snippets: Sendable {
    let store: any GlobalValues & JobLocks
    /// Whose they are: each app's agents keep their own.
    var app: AppID = .default

    /// The app's snippets: `desk/snippets`, the key from before there were several apps, for the default.
    var key: String { app == .default ? "desk/snippets" : "desk/snippets/\(app)" }

    /// The same store's snippets of `app`.
    func of(_ app: AppID) -> Snippets {
        var snippets = self
        snippets.app = app
        return snippets
    }
    /// At most this many snippets, each a name of 1–32 characters and a text Discord can post.
    static let limit = 100
    static let nameLength = 1...32

    enum Problem: Error, Equatable {
        case invalidName
        case invalidText
        case full
        case exists(String)
        case notFound(String)
        case busy
    }

    func all() async throws -> [String: String] {
        guard let stored = try await store.globalValue(key), let data = stored.data(using: .utf8) else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:]
    }

    func text(of name: String) async throws -> String? {
        try await all()[Self.normalized(name)]
    }

    /// Names starting with `prefix` (any case), alphabetically, at most `limit`.
    func names(startingWith prefix: String, limit: Int = 25) async throws -> [String] {
        let prefix = prefix.lowercased()
        return try await all().keys.filter { $0.hasPrefix(prefix) }.sorted().prefix(limit).map { $0 }
    }

    enum Change { case add, edit, remove }

    /// Adds, replaces or removes one snippet.
    func change(_ change: Change, name: String, text: String?) async throws {
        let name = Self.normalized(name)
        guard Self.nameLength.contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || "-_".contains($0) }) else {
            throw Problem.invalidName
        }
        if change != .remove {
            guard let text, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, text.utf16.count <= MessageText.discordLimit,
                ControlCharacters.first(in: text) == nil
            else {
                throw Problem.invalidText
            }
        }
        let done: Void? = try await store.exclusively(key) {
            var snippets = try await all()
            switch change {
            case .add:
                guard snippets[name] == nil else { throw Problem.exists(name) }
                guard snippets.count < Self.limit else { throw Problem.full }
                snippets[name] = text
            case .edit:
                guard snippets[name] != nil else { throw Problem.notFound(name) }
                snippets[name] = text
            case .remove:
                guard snippets.removeValue(forKey: name) != nil else { throw Problem.notFound(name) }
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let data = try encoder.encode(snippets)
            try await store.setGlobalValue(key, to: String(decoding: data, as: UTF8.self))
        }
        guard done != nil else { throw Problem.busy }
    }

    static func normalized(_ name: String) -> String { name.trimmingCharacters(in: .whitespaces).lowercased() }

    /// The fields a snippet may use, from the user's installation info: `{app_version}`,
    /// `{build}`, `{os}` (platform and version), `{os_version}`, `{device}`, `{locale}`. A field
    /// the app did not report becomes `unknown`; anything else in braces stays as written.
    static func fill(_ text: String, installation: InstallationInfo?) -> String {
        let os = [installation?.osPlatform, installation?.osVersion].compactMap { $0 }.joined(separator: " ")
        let fields: [String: String?] = [
            "app_version": installation?.appVersion, "build": installation?.buildVersion, "os": os.isEmpty ? nil : os,
            "os_version": installation?.osVersion, "device": installation?.deviceModel, "locale": installation?.locale,
        ]
        // The values come from the app (the user's device): short, on one line, and their markdown
        // shown as text (as in the device note), never a link posted under the agent's name.
        return SnippetText.fill(
            text, fields: fields.mapValues { $0.map { DiscordMarkdown.escaped(MessageText.clip($0.replacingOccurrences(of: "\n", with: " "), limit: 100)) } })
    }
}
