/// `GET /v1/support-status`: whether support is in, so the app can say what to expect before the
/// user writes.
public struct SupportStatus: Sendable, Codable, Hashable {
    public enum State: String, Sendable, Codable, Hashable {
        case open
        case away
    }

    public var status: State
    /// When support is next in by its hours (ISO 8601), when away and the hours say; nil otherwise.
    public var nextOpening: String?

    public init(status: State, nextOpening: String? = nil) {
        self.status = status
        self.nextOpening = nextOpening
    }
}
