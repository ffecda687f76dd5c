import Foundation
import ThreadDeskCore
import ThreadDeskSettings

/// The assistant (`ASSIST_*`): drafts of answers grounded in the FAQ, shown to the agent first,
/// and optionally answers while support is away. Off unless a provider is named. With
/// `APPS_FILE`, these are the defaults each app's `assist` object overrides field by field.
public struct AssistSettings: Sendable, Hashable, CustomReflectable {
    /// The provider's root, the one holding `/chat/completions` (`ASSIST_URL`): a hosted API
    /// (`https://api.openai.com/v1`) or a local llama.cpp, Ollama or vLLM server. nil: off.
    public var url: String?
    /// The model asked for (`ASSIST_MODEL`); required with a URL.
    public var model: String?
    /// The provider's key, read from `ASSIST_API_KEY_FILE` at start; nil: none sent.
    public var apiKey: String?
    /// Tokens an app may spend a day (UTC), prompts and answers together; 0: no limit.
    public var tokensPerDay = 200_000
    /// Tokens one user's conversations may cost a day; 0: no limit.
    public var tokensPerUserPerDay = 20_000
    /// Tokens the users writing from one network (an IPv4 address, an IPv6 /64) may cost an app a
    /// day, drafts and answers while away; 0: no limit. Throwaway sessions from a few addresses
    /// spend this, not the app's day.
    public var tokensPerNetworkPerDay = 40_000
    /// The share of an app's day, in percent, that users no agent has answered yet may spend
    /// (drafts and answers while away); 100: no such limit. The rest stays for known users.
    public var newUsersShare = 50
    /// How long one answer may take, retries included (`ASSIST_TIMEOUT_SECONDS`).
    public var timeout: Duration = .seconds(30)
    /// The longest answer asked for, in tokens (`ASSIST_MAX_TOKENS`).
    public var maxTokens = 500
    /// Drafts for the agent when a user's message needs a reply (`ASSIST_DRAFTS`).
    public var drafts = true
    /// How long after a user's message the draft is written, so a burst gets one draft.
    public var draftDelay: Duration = .seconds(10)
    /// The longest draft shown, in characters (`ASSIST_MAX_DRAFT_CHARS`).
    public var maxDraftCharacters = 1500
    /// Whether the assistant answers users itself while support is away (`ASSIST_AUTO`).
    public var auto = AssistAuto.off
    /// How much of the user's message the best FAQ answer must cover before the assistant answers
    /// alone, 0 to 1 (`ASSIST_AUTO_MIN_MATCH`, `SuggestionIndex.bestMatch`).
    public var autoMinimumMatch = 0.6
    /// The name the assistant's own answers are posted under (`ASSIST_NAME`); agents cannot speak under it.
    public var name = "Assistant"

    public init() {}

    static let maximumKeyBytes = 4096
    static let maximumTokensPerCall = 8192

    /// Reads every `ASSIST_*` variable, adding what is wrong to `problem`.
    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let text = value("ASSIST_URL") {
            if Self.isProviderURL(text) { url = Self.trimmingSlash(text) } else { problem.invalid.append("ASSIST_URL (an http or https URL, e.g. https://api.openai.com/v1)") }
        }
        if let text = value("ASSIST_MODEL") {
            if Self.isModel(text) { model = text } else { problem.invalid.append("ASSIST_MODEL (1–200 characters, no spaces)") }
        }
        if let path = value("ASSIST_API_KEY_FILE") {
            switch Self.readKey(URL(fileURLWithPath: path)) {
            case .success(let key): apiKey = key
            case .failure(let reason): problem.invalid.append("ASSIST_API_KEY_FILE (\(reason))")
            }
        }
        func count(_ name: String, in range: ClosedRange<Int>, _ what: String) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text), range.contains(number) else {
                problem.invalid.append("\(name) (\(what))")
                return nil
            }
            return number
        }
        func flag(_ name: String) -> Bool? {
            guard let text = value(name) else { return nil }
            switch text.lowercased() {
            case "on", "true", "1", "yes": return true
            case "off", "false", "0", "no": return false
            default:
                problem.invalid.append("\(name) (on or off)")
                return nil
            }
        }
        tokensPerDay = count("ASSIST_TOKENS_PER_DAY", in: 0...1_000_000_000, "whole tokens, 0 for no limit") ?? tokensPerDay
        tokensPerUserPerDay = count("ASSIST_TOKENS_PER_USER_PER_DAY", in: 0...1_000_000_000, "whole tokens, 0 for no limit") ?? tokensPerUserPerDay
        tokensPerNetworkPerDay = count("ASSIST_TOKENS_PER_NETWORK_PER_DAY", in: 0...1_000_000_000, "whole tokens, 0 for no limit") ?? tokensPerNetworkPerDay
        newUsersShare = count("ASSIST_NEW_USERS_SHARE", in: 0...100, "a whole percentage, 0 to 100") ?? newUsersShare
        if let seconds = count("ASSIST_TIMEOUT_SECONDS", in: 1...600, "whole seconds, 1 to 600") { timeout = .seconds(seconds) }
        maxTokens = count("ASSIST_MAX_TOKENS", in: 16...Self.maximumTokensPerCall, "16 to \(Self.maximumTokensPerCall)") ?? maxTokens
        drafts = flag("ASSIST_DRAFTS") ?? drafts
        if let seconds = count("ASSIST_DRAFT_DELAY_SECONDS", in: 0...3600, "whole seconds, 0 to 3600") { draftDelay = .seconds(seconds) }
        maxDraftCharacters = count("ASSIST_MAX_DRAFT_CHARS", in: 100...1800, "100 to 1800 characters") ?? maxDraftCharacters
        if let text = value("ASSIST_AUTO") {
            if let mode = AssistAuto(rawValue: text.lowercased()) { auto = mode } else { problem.invalid.append("ASSIST_AUTO (off or away)") }
        }
        if let text = value("ASSIST_AUTO_MIN_MATCH") {
            if let share = Double(text), Self.isMinimumMatch(share) { autoMinimumMatch = share } else {
                problem.invalid.append("ASSIST_AUTO_MIN_MATCH (a number from 0 to 1, e.g. 0.6)")
            }
        }
        if let text = value("ASSIST_NAME") {
            if let name = Self.checkedName(text) { self.name = name } else { problem.invalid.append("ASSIST_NAME (\(Self.nameRule))") }
        }
    }

    /// The name `app`'s automatic answers are posted under, through the forum's webhook; nil when
    /// the app has no answers while away. Reserved only then: the mirror tells the assistant's
    /// answers by it (also in history read again), and no agent speaks under it. Apps that never
    /// turned the answers on keep every post as `support`, which SDKs older than the `assistant`
    /// author can read.
    public func assistantName(for app: AppSettings) -> AssistantName? {
        guard let settings = effective(for: app), settings.auto == .away else { return nil }
        return AssistantName(settings.name)
    }

    /// What `app` gets: the deployment's settings with the app's overrides; nil when the
    /// assistant is off for it (no provider, or `"enabled": false`).
    public func effective(for app: AppSettings) -> AssistAppSettings? {
        let overrides = app.assist ?? AssistOverrides()
        if overrides.enabled == false { return nil }
        guard let url = overrides.url ?? url, let model = overrides.model ?? model else { return nil }
        // A key goes only to the provider it was given for: an app that names its own provider
        // sends its own key or none, never the deployment's.
        let key = overrides.url == nil ? overrides.apiKey ?? apiKey : overrides.apiKey
        return AssistAppSettings(
            provider: AssistProvider(url: url, model: model, apiKey: key),
            tokensPerDay: overrides.tokensPerDay ?? tokensPerDay,
            tokensPerUserPerDay: overrides.tokensPerUserPerDay ?? tokensPerUserPerDay,
            tokensPerNetworkPerDay: overrides.tokensPerNetworkPerDay ?? tokensPerNetworkPerDay,
            newUsersShare: overrides.newUsersShare ?? newUsersShare,
            drafts: overrides.drafts ?? drafts,
            auto: overrides.auto ?? auto,
            autoMinimumMatch: overrides.autoMinimumMatch ?? autoMinimumMatch,
            name: overrides.name ?? name)
    }

    /// Each app the assistant is on for has a model: named with the app when it has not.
    func problems(for apps: [AppSettings], single: Bool) -> [String] {
        var problems: [String] = []
        for app in apps {
            let overrides = app.assist ?? AssistOverrides()
            guard overrides.enabled != false, overrides.url ?? url != nil, overrides.model ?? model == nil else { continue }
            problems.append(single ? "ASSIST_MODEL (required with ASSIST_URL)" : "APPS_FILE app \"\(app.id)\": assist.model (or ASSIST_MODEL) required with a provider URL")
        }
        return problems
    }

    public var customMirror: Mirror {
        Mirror(self, children: [
            "url": url as Any, "model": model as Any, "apiKey": apiKey == nil ? "nil" : "<redacted>", "tokensPerDay": tokensPerDay,
            "tokensPerUserPerDay": tokensPerUserPerDay, "tokensPerNetworkPerDay": tokensPerNetworkPerDay, "newUsersShare": newUsersShare,
            "drafts": drafts, "auto": auto, "autoMinimumMatch": autoMinimumMatch, "name": name,
        ])
    }

    static func isProviderURL(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = parts.host, !host.isEmpty, parts.query == nil, parts.fragment == nil,
            parts.user == nil, parts.password == nil
        else { return false }
        return true
    }

    static func trimmingSlash(_ text: String) -> String {
        var text = text
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// A share of the query the best FAQ answer covers (`SuggestionIndex.bestMatch`): 0 to 1.
    static func isMinimumMatch(_ share: Double) -> Bool { share.isFinite && (0...1).contains(share) }

    static let nameRule = "1–80 characters, without \"discord\" or \"clyde\", not \"everyone\" or \"here\""

    /// The assistant's name, trimmed, when Discord takes it as a webhook's username: at most 80
    /// characters, neither "discord" nor "clyde" in it, not "everyone" or "here"; else nil.
    static func checkedName(_ text: String) -> String? {
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let folded = name.lowercased()
        guard !name.isEmpty, name.utf16.count <= 80, !folded.contains("discord"), !folded.contains("clyde"),
            folded != "everyone", folded != "here"
        else { return nil }
        return name
    }

    static func isModel(_ text: String) -> Bool {
        (1...200).contains(text.count) && text.allSatisfy { $0.isASCII && !$0.isWhitespace && !$0.isNewline && $0.asciiValue.map { $0 >= 0x21 && $0 < 0x7F } == true }
    }

    /// A key file's content, trimmed: one line of printable ASCII (it goes into a header).
    static func readKey(_ url: URL) -> Result<String, KeyFileProblem> {
        guard let data = try? Data(contentsOf: url), data.count <= maximumKeyBytes, let text = String(data: data, encoding: .utf8) else {
            return .failure(KeyFileProblem(reason: "unreadable, or larger than \(maximumKeyBytes) bytes: \(url.path)"))
        }
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty, key.utf8.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) else {
            return .failure(KeyFileProblem(reason: "one line of printable characters: \(url.path)"))
        }
        return .success(key)
    }

    struct KeyFileProblem: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }
}

/// A chat-completions endpoint and the model asked there.
public struct AssistProvider: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public var url: String
    public var model: String
    public var apiKey: String?

    public init(url: String, model: String, apiKey: String? = nil) { (self.url, self.model, self.apiKey) = (url, model, apiKey) }

    public var description: String { "\(model) at \(url)" }
    public var customMirror: Mirror { Mirror(self, children: ["url": url, "model": model, "apiKey": apiKey == nil ? "nil" : "<redacted>"]) }
}

/// The assistant as one app has it: the settings in effect once its overrides are applied.
public struct AssistAppSettings: Sendable, Hashable {
    public var provider: AssistProvider
    public var tokensPerDay: Int
    public var tokensPerUserPerDay: Int
    public var tokensPerNetworkPerDay: Int
    /// Percent of `tokensPerDay` users no agent has answered yet may spend.
    public var newUsersShare: Int
    public var drafts: Bool
    public var auto: AssistAuto
    /// The coverage the best FAQ answer needs before the assistant answers alone.
    public var autoMinimumMatch: Double
    /// The name the assistant's own answers are posted under.
    public var name: String
}
