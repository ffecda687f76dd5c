import Foundation

/// A ThreadDesk push, read from a notification's `userInfo`: which support message it announces,
/// the badge it set (the unread count when it was sent) and the conversation it belongs to.
/// Any other push of the app reads as nil, so one notification handler serves both; a push
/// asking for a rating is a ``SupportRatingPush`` (it names no message) and reads as nil here.
///
/// ```swift
/// if let push = SupportPush(userInfo: response.notification.request.content.userInfo) {
///     showSupportChat()
///     await conversation.receive(push)
/// }
/// ```
public struct SupportPush: Sendable, Hashable {
    /// The support message the push announces (a snowflake, as digits).
    public var messageID: String
    /// The unread count when the push was sent (`aps.badge`).
    public var badge: Int?
    /// The user the conversation belongs to (`aps.thread-id`, which also groups the
    /// notifications); nil from servers that did not set it.
    public var userID: String?
    /// Whether it came silently (`content-available`, no alert): a reply support chose not to
    /// announce, sent so the app's unread count and conversation stay current.
    public var isSilent: Bool

    public init(messageID: String, badge: Int? = nil, userID: String? = nil, isSilent: Bool = false) {
        self.messageID = messageID
        self.badge = badge
        self.userID = userID
        self.isSilent = isSilent
    }

    /// The push in a notification's `userInfo`; nil when it is not ThreadDesk's.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let id = Self.snowflake(userInfo[PushPayload.messageID]) else { return nil }
        let aps = userInfo["aps"] as? [AnyHashable: Any] ?? [:]
        messageID = id
        badge = Self.integer(aps["badge"])
        userID = Self.userID(aps)
        isSilent = aps["alert"] == nil && Self.integer(aps["content-available"]) == 1
    }

    /// An id as a push carries it: digits, as many as a snowflake has at most.
    static func snowflake(_ value: Any?) -> String? {
        guard let id = value as? String, !id.isEmpty, id.count <= 20, id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return id
    }

    /// `aps.thread-id`: the user the push is for.
    static func userID(_ aps: [AnyHashable: Any]) -> String? {
        (aps["thread-id"] as? String).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// JSON numbers arrive as `NSNumber` on Apple platforms and as `Int` or `Double` elsewhere.
    static func integer(_ value: Any?) -> Int? {
        let number: Double? = switch value {
        case let value as Int: Double(value)
        case let value as Double: value
        case let value as NSNumber: value.doubleValue
        default: nil
        }
        // A count: whole, not negative, not absurd (NaN, infinities and the like read as none).
        guard let number, number.isFinite, number >= 0, number <= 1_000_000, number.rounded() == number else { return nil }
        return Int(number)
    }
}

#if canImport(UserNotifications)
import UserNotifications

/// The few notification calls an app makes for support pushes, on Apple platforms: permission,
/// the badge kept equal to the unread count, recognising a tapped support notification, and not
/// showing a banner for a message already on screen.
@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
public enum SupportNotifications {
    /// Asks the user once to allow alerts, sounds and the badge (the system remembers the answer).
    public static func requestAuthorization() async throws -> Bool {
        try await UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .badge, .sound])
    }

    #if !os(watchOS)
    /// Sets the app icon's badge (0 clears it): pass ``SupportConversation/unreadCount``
    /// whenever it changes, so the badge and the chat agree. (watchOS has no app badge.)
    public static func setBadge(_ count: Int) async throws {
        try await UNUserNotificationCenter.current().setBadgeCount(max(0, count))
    }
    #endif

    #if !os(tvOS)
    /// The support push behind a notification the user tapped; nil for the app's other notifications
    /// (a rating push included: ``ratingPush(from:)``).
    public static func push(from response: UNNotificationResponse) -> SupportPush? {
        SupportPush(userInfo: response.notification.request.content.userInfo)
    }

    /// The rating push behind a notification the user tapped; nil for any other.
    public static func ratingPush(from response: UNNotificationResponse) -> SupportRatingPush? {
        SupportRatingPush(userInfo: response.notification.request.content.userInfo)
    }

    /// How to show a notification that arrives while the app is in front
    /// (`userNotificationCenter(_:willPresent:)`): a support push shows nothing while the
    /// conversation is on screen (the message, or the rating row, is there already) and a banner
    /// otherwise; the app's other notifications get `otherwise`.
    public static func presentationOptions(
        for notification: UNNotification, conversationOnScreen: Bool,
        otherwise: UNNotificationPresentationOptions = [.banner, .list, .sound, .badge]
    ) -> UNNotificationPresentationOptions {
        let userInfo = notification.request.content.userInfo
        guard SupportPush(userInfo: userInfo) != nil || SupportRatingPush(userInfo: userInfo) != nil else { return otherwise }
        return conversationOnScreen ? [] : [.banner, .list, .sound, .badge]
    }
    #endif
}
#endif
