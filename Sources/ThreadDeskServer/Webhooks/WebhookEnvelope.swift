import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The body every webhook delivery carries: `{"id", "type", "createdAt", "app", "data"}`.
enum WebhookEnvelope {
    /// A delivery's id: unique, and the receiver's key against a delivery seen twice.
    static func newID() -> String { "whd_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    /// The body's bytes; nil when `data` does not encode.
    static func encode(id: String, type: WebhookEventType, createdAt: Date, app: AppID, data: some Encodable & Sendable) -> Data? {
        try? encoder.encode(Body(id: id, type: type.rawValue, createdAt: timestamp(createdAt), app: app.rawValue, data: data))
    }

    /// ISO 8601 with milliseconds, UTC, as the API's own timestamps.
    static func timestamp(_ date: Date) -> String { Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date) }

    private struct Body<Payload: Encodable>: Encodable {
        let id: String
        let type: String
        let createdAt: String
        let app: String
        let data: Payload
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// `message.created` and `message.updated`: the message as the API shows it (`SupportMessage`),
/// with the user it belongs to (their id as the API shows it; the body's `app` names the app).
struct WebhookMessage: Encodable, Sendable {
    let message: SupportMessage
    let userId: String

    init(_ message: SupportMessage, owner: UserID) {
        (self.message, userId) = (message, owner.local.rawValue)
    }

    private enum Keys: String, CodingKey { case userId }

    func encode(to encoder: any Encoder) throws {
        try message.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(userId, forKey: .userId)
    }
}

/// `message.deleted`: which message went.
struct WebhookDeletedMessage: Encodable, Sendable {
    let id: String
    let userId: String
}

/// `crash.reported`: a crash or hang report kept for the user.
struct WebhookCrashReport: Encodable, Sendable {
    let id: String
    let userId: String
    let kind: String
    /// The crash group (`C12`), as the desk names it.
    let group: String
    let appVersion: String
    let appBuild: String
}
