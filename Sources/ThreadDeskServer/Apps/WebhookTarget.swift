import Crypto
import Foundation
import ThreadDeskCore

/// What a webhook reports (the body's `type`).
public enum WebhookEventType: String, Sendable, Hashable, Codable, CaseIterable {
    case conversationCreated = "conversation.created"
    case messageCreated = "message.created"
    case messageUpdated = "message.updated"
    case messageDeleted = "message.deleted"
    case conversationClosed = "conversation.closed"
    case conversationReopened = "conversation.reopened"
    case ratingSubmitted = "rating.submitted"
    case crashReported = "crash.reported"
    case userUpdated = "user.updated"

    /// `message.created,rating.submitted` (or `*`, every type): nil when a name is unknown.
    public static func list(_ text: String) -> Set<WebhookEventType>? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if names == ["*"] { return Set(allCases) }
        let types = names.compactMap(WebhookEventType.init(rawValue:))
        return types.count == names.count && !types.isEmpty ? Set(types) : nil
    }
}

/// One receiver of an app's events: where they are posted, the secret they are signed with, and
/// which types it takes. From `APPS_FILE` (`webhooks: [{url, secretFile, events}]`) or, for the
/// one app of a deployment without it, `WEBHOOK_URL`, `WEBHOOK_SECRET_FILE`, `WEBHOOK_EVENTS`.
public struct WebhookTarget: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public var url: URL
    /// HMAC-SHA256 key of the signature (never logged).
    public var secret: String
    public var events: Set<WebhookEventType>

    public init(url: URL, secret: String, events: Set<WebhookEventType> = Set(WebhookEventType.allCases)) {
        (self.url, self.secret, self.events) = (url, secret, events)
    }

    /// The webhook's name in the store: its app and URL, hashed (a URL may carry credentials).
    /// A new URL is a new webhook; one its receiver turned off (410) stays off under its key.
    public func key(app: AppID) -> String {
        let digest = SHA256.hash(data: Data("\(app.rawValue)\u{0}\(url.absoluteString)".utf8))
        return "wh_" + digest.prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// The receiver's host, as logs and the doctor name it (no path, no credentials).
    public var host: String { url.host ?? "?" }

    public var description: String { "webhook to \(url.scheme ?? "?")://\(host)" }

    /// Never the secret, nor the URL's path or credentials.
    public var customMirror: Mirror {
        Mirror(self, children: ["host": host, "secret": "<redacted>", "events": events.map(\.rawValue).sorted()])
    }

    /// The shortest secret accepted: it is all that proves a delivery came from ThreadDesk.
    public static let minimumSecretLength = 32

    /// An http or https URL with a host (checked when the configuration is read).
    public static func isReceiverURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host?.isEmpty == false
        else { return nil }
        return url
    }

    /// A secret file's content (trimmed): nil with the reason when it is unreadable or short.
    public static func readSecret(_ url: URL) -> Result<String, SecretProblem> {
        guard let content = try? String(contentsOf: url, encoding: .utf8) else { return .failure(.unreadable) }
        let secret = content.trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= minimumSecretLength else { return .failure(.short) }
        return .success(secret)
    }

    public enum SecretProblem: Error, CustomStringConvertible {
        case unreadable
        case short

        public var description: String {
            switch self {
            case .unreadable: "unreadable"
            case .short: "at least \(WebhookTarget.minimumSecretLength) characters"
            }
        }
    }
}
