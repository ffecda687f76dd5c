import Foundation

/// An app's `assist` object in `APPS_FILE`: each field set replaces the deployment's.
public struct AssistOverrides: Sendable, Hashable, CustomReflectable {
    /// false: the assistant is off for this app whatever the deployment says.
    public var enabled: Bool?
    public var url: String?
    public var model: String?
    /// The content of the app's `apiKeyFile`.
    public var apiKey: String?
    public var tokensPerDay: Int?
    public var tokensPerUserPerDay: Int?
    public var tokensPerNetworkPerDay: Int?
    public var newUsersShare: Int?
    public var drafts: Bool?
    public var auto: AssistAuto?
    public var autoMinimumMatch: Double?
    public var name: String?

    public init() {}

    static let fields: Set<String> = [
        "enabled", "url", "model", "apiKeyFile", "tokensPerDay", "tokensPerUserPerDay", "tokensPerNetworkPerDay", "newUsersShare", "drafts",
        "auto", "autoMinimumMatch", "name",
    ]

    public var customMirror: Mirror {
        Mirror(self, children: [
            "enabled": enabled as Any, "url": url as Any, "model": model as Any, "apiKey": apiKey == nil ? "nil" : "<redacted>",
            "tokensPerDay": tokensPerDay as Any, "tokensPerUserPerDay": tokensPerUserPerDay as Any,
            "tokensPerNetworkPerDay": tokensPerNetworkPerDay as Any, "newUsersShare": newUsersShare as Any, "drafts": drafts as Any, "auto": auto as Any,
            "autoMinimumMatch": autoMinimumMatch as Any, "name": name as Any,
        ])
    }
}

/// When the assistant answers users without an agent's click.
public enum AssistAuto: String, Sendable, Hashable, CaseIterable {
    /// Never: drafts only.
    case off
    /// While support is away (hours or `/away`), once per conversation until an agent replies,
    /// and only from a strong FAQ match.
    case away
}
