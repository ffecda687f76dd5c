import Foundation

/// A ThreadDesk push asking the user to rate a conversation support closed, read from a
/// notification's `userInfo`; nil for any other push (a message's included), so a handler tells
/// the two apart:
///
/// ```swift
/// let userInfo = response.notification.request.content.userInfo
/// if let push = SupportPush(userInfo: userInfo) {
///     await conversation.receive(push)             // a reply
/// } else if let push = SupportRatingPush(userInfo: userInfo) {
///     await conversation.receive(push)             // the rating row shows
/// }
/// ```
public struct SupportRatingPush: Sendable, Hashable {
    /// The closed conversation to rate (`RatingRequest.conversationId`, digits).
    public var conversationID: String
    /// The user the conversation belongs to (`aps.thread-id`).
    public var userID: String?
    /// The unread count when the push was sent (`aps.badge`), if it set one.
    public var badge: Int?

    public init(conversationID: String, userID: String? = nil, badge: Int? = nil) {
        self.conversationID = conversationID
        self.userID = userID
        self.badge = badge
    }

    /// The rating push in a notification's `userInfo`; nil when it is not one.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let id = SupportPush.snowflake(userInfo[PushPayload.ratingConversationID]) else { return nil }
        let aps = userInfo["aps"] as? [AnyHashable: Any] ?? [:]
        conversationID = id
        userID = SupportPush.userID(aps)
        badge = SupportPush.integer(aps["badge"])
    }
}
