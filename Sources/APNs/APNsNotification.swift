import Foundation

/// One notification: what the device shows and how APNs should treat it.
public struct APNsNotification: Sendable, Hashable {
    public enum PushType: String, Sendable, Hashable {
        case alert
        case background
    }

    public var pushType: PushType
    public var title: String?
    public var body: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var category: String?
    /// Extra top-level keys for the app (strings only).
    public var custom: [String: String]
    /// 10 delivers now; 5 lets the device save power. Background pushes must use 5.
    public var priority: Int
    public var expiration: Date?
    public var collapseID: String?
    public var id: UUID?

    public init(
        pushType: PushType = .alert, title: String? = nil, body: String? = nil, badge: Int? = nil, sound: String? = nil,
        threadID: String? = nil, category: String? = nil, custom: [String: String] = [:], priority: Int? = nil,
        expiration: Date? = nil, collapseID: String? = nil, id: UUID? = nil
    ) {
        self.pushType = pushType
        self.title = title
        self.body = body
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.custom = custom
        self.priority = priority ?? (pushType == .background ? 5 : 10)
        self.expiration = expiration
        self.collapseID = collapseID
        self.id = id
    }

    /// Apple's limit for a notification's JSON payload.
    public static let maxPayloadSize = 4096

    /// The JSON payload, shortening `body` (never title or keys) until it fits in 4 KB.
    public func payload() -> Data {
        let full = encode(body: body)
        guard full.count > Self.maxPayloadSize, let body else { return full }
        var low = 0
        var high = body.count
        var best = encode(body: "…")
        while low <= high {
            let middle = (low + high) / 2
            let candidate = encode(body: String(body.prefix(middle)) + "…")
            if candidate.count <= Self.maxPayloadSize {
                best = candidate
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    private func encode(body: String?) -> Data {
        var aps: [String: Any] = [:]
        switch pushType {
        case .alert:
            var alert: [String: Any] = [:]
            if let title { alert["title"] = title }
            if let body { alert["body"] = body }
            aps["alert"] = alert
            if let sound { aps["sound"] = sound }
            if let category { aps["category"] = category }
        case .background:
            aps["content-available"] = 1
        }
        if let badge { aps["badge"] = badge }
        if let threadID { aps["thread-id"] = threadID }
        var root: [String: Any] = custom
        root["aps"] = aps
        return (try? JSONSerialization.data(withJSONObject: root, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }
}
