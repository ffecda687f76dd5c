import ThreadDeskCore

/// One app a deployment serves: its key, its forum, and what differs from app to app. A
/// deployment configured by its environment alone serves one, `default`, made of the variables
/// (`APP_KEY`, `DISCORD_FORUM_CHANNEL_ID`, …); `APPS_FILE` lists several.
public struct AppSettings: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public var id: AppID
    /// How the desk and the doctor name the app.
    public var name: String
    /// What the app's widget presents in `X-App-Key`: it names the app.
    public var appKey: String
    /// The guild of the app's forum (apps may live in different guilds of the same bot).
    public var guildID: String
    /// The forum the app's users' threads are made in.
    public var forumChannelID: String
    /// The app's forum of curated answers (`faqChannelID`): its users alone are suggested them.
    public var faqChannelID: String?
    /// Applied when the forum requires a tag; the forum's first tag when not set.
    public var defaultTagID: String?
    /// The app backend's secret for `userHash`; nil when its user ids are not vouched for.
    public var identitySecret: String?
    /// The reference system's key for this app's legacy routes; nil: off.
    public var legacyAPIKey: String?
    /// The APNs topic (the app's bundle id) its pushes are sent for; nil: the deployment's `APNS_TOPIC`.
    public var apnsTopic: String?
    /// The bundle ids App Attest accepts for this app (`appAttest.bundleIDs`); nil:
    /// `APP_ATTEST_BUNDLE_IDS`. With several apps each should name its own: a key attested for one
    /// app's bundle id opens nothing of another's.
    public var attestBundleIDs: [String]?
    /// When support is in for this app; nil: always.
    public var supportHours: SupportHours?
    /// What a user of this app who writes while support is away gets; nil: nothing.
    public var awayMessage: String?
    /// The app's `assist` object: what differs from the deployment's `ASSIST_*`; nil: those alone.
    public var assist: AssistOverrides?
    /// The app's reserved share of the deployment's thread budget and streams; nil: it draws on
    /// what no app reserved.
    public var limits: AppLimits?
    /// Where the app's events are posted, signed (`webhooks` in `APPS_FILE`; `WEBHOOK_URL` alone).
    public var webhooks: [WebhookTarget] = []

    public init(id: AppID, name: String, appKey: String, guildID: String, forumChannelID: String) {
        (self.id, self.name, self.appKey, self.guildID, self.forumChannelID) = (id, name, appKey, guildID, forumChannelID)
    }

    public var description: String { "app \(id) (forum \(forumChannelID))" }

    /// Never the keys or the secret.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "name": name, "appKey": "<redacted>", "guildID": guildID, "forumChannelID": forumChannelID,
                "identitySecret": identitySecret == nil ? "nil" : "<redacted>", "legacyAPIKey": legacyAPIKey == nil ? "nil" : "<redacted>",
                "apnsTopic": apnsTopic as Any, "assist": assist as Any, "limits": limits as Any, "webhooks": webhooks,
            ])
    }
}
