import DiscordREST
import ThreadDeskWire
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// `/user`: who is on the other side of the thread, for the agent's eyes only.
extension Desk {
    /// Pages of the mirror counted for the card, at most (beyond: "at least").
    static let cardPages = 10

    func userCard(_ owner: UserID, thread: Snowflake, app: AppSettings) async throws -> String {
        guard let record = try await parts.store.user(owner) else { return "ThreadDesk has no record of this thread's user." }
        let device = record.installation ?? record.pendingInstallation
        let verified = app.identitySecret != nil ? "identity verified by the app" : "identity not verified (no IDENTITY_SECRET)"
        let ofApp = parts.catalog.isShared ? " of **\(app.name)** (`\(app.id)`)" : ""
        var lines = ["**User** `\(record.id.local.rawValue)`\(ofApp) · " + verified]
        let os = [device?.osPlatform, device?.osVersion].compactMap { $0 }.joined(separator: " ")
        lines.append(
            [
                ("App", device?.appLabel), ("OS", os.isEmpty ? nil : os), ("Device", device?.deviceModel), ("Locale", device?.locale),
            ].map { "**\($0.0)** \(Self.shown($0.1))" }.joined(separator: " · "))
        lines.append("**First seen** \(Self.when(record.createdAt)) · **Last active** \(Self.when(record.updatedAt))")
        let push = record.pushToken == nil ? "no" : "yes (\(record.pushEnvironment?.rawValue ?? "production"))"
        let readUpTo = record.lastReadMessageID.map { "https://discord.com/channels/\(app.guildID)/\(thread)/\($0)" } ?? "nothing yet"
        // The same count as the badge, `GET /v1/unread` and the export: read from the mirror.
        let unread = try await LiveFeed(store: parts.store).unreadCount(record)
        lines.append("**Push** \(push) · **Unread** \(unread) · **Read up to** \(readUpTo)")
        let (fromUser, fromSupport, automatic, complete) = try await messageCounts(thread)
        let atLeast = complete ? "" : "at least "
        let answers = automatic == 0 ? "" : ", \(atLeast)\(automatic) automatic \(automatic == 1 ? "answer" : "answers")"
        lines.append("**Thread** <#\(thread)> · **Messages** \(atLeast)\(fromUser) from the user, \(atLeast)\(fromSupport) from support" + answers)
        if let conversation = try await parts.store.latestConversation(of: owner) { lines.append(Self.conversationLine(conversation)) }
        let room = MessageText.discordLimit - lines.joined(separator: "\n").utf16.count
        lines += Self.profileLines(try await parts.store.profile(of: owner), room: room)
        return MessageText.clip(lines.joined(separator: "\n"), limit: MessageText.discordLimit)
    }

    /// Activities the card lists, the newest first.
    static let cardActivities = 10

    /// What the app says about the user: its attributes and their last ten activities, within
    /// `room` (UTF-16 units) so the card stays one message; the export has them whole.
    static func profileLines(_ profile: UserProfile, room: Int) -> [String] {
        var lines: [String] = []
        var left = room
        if !profile.attributes.isEmpty {
            let head = "\n**Attributes**" + (profile.attributesUpdatedAt.map { " (set \(when($0)))" } ?? "") + " "
            // The attributes take up to 60 % of the room when there is activity to show too.
            let share = profile.activity.isEmpty ? left : left * 6 / 10
            if let attributes = ProfileText.attributes(profile.attributes, budget: share - head.utf16.count) {
                lines.append(String(head.dropFirst()) + attributes)
                left -= head.utf16.count + attributes.utf16.count
            }
        }
        let events = profile.activity.map { ProfileText.Event(name: $0.name, properties: $0.properties, occurredAt: $0.occurredAt) }
        let head = "\n**Recent activity**\n"
        if let activity = ProfileText.activity(events, limit: cardActivities, budget: left - head.utf16.count) {
            lines.append(String(head.dropFirst()) + activity)
        }
        return lines
    }

    /// The latest conversation: open (waiting since, a scheduled close) or closed, and its rating.
    static func conversationLine(_ conversation: ConversationRecord) -> String {
        var parts = ["**Conversation** opened \(when(conversation.openedAt))"]
        if let since = conversation.waitingSince { parts.append("waiting since \(when(since))") }
        if let due = conversation.closeDueAt { parts.append("closes \(when(due))") }
        if let closed = conversation.closedAt { parts.append("closed \(when(closed))") }
        if let rating = conversation.rating {
            let stars = String(repeating: "★", count: rating.score) + String(repeating: "☆", count: max(0, 5 - rating.score))
            parts.append("rated \(stars) \(rating.score)/5" + (rating.comment.map { " — " + DiscordMarkdown.escaped(MessageText.clip($0, limit: 200)) } ?? ""))
        } else if conversation.ratingRequestedAt != nil {
            parts.append("rating asked")
        }
        return parts.joined(separator: " · ")
    }

    /// Messages the user can see in the thread, by who wrote them, read from the mirror.
    private func messageCounts(_ thread: Snowflake) async throws -> (user: Int, support: Int, assistant: Int, complete: Bool) {
        var (user, support, assistant) = (0, 0, 0)
        var cursor: Snowflake?
        for _ in 0..<Self.cardPages {
            let page = try await parts.store.mirrorPage(thread: thread, .before(cursor), limit: 100)
            for message in page.messages {
                switch message.author {
                case .user: user += 1
                case .support: support += 1
                case .assistant: assistant += 1
                }
            }
            guard page.hasMore, let oldest = page.messages.first?.id else { return (user, support, assistant, true) }
            cursor = oldest
        }
        return (user, support, assistant, false)
    }

    /// A value the app sent, as text: its markdown escaped the way the device note's is (a code
    /// span would not do: a backtick in the value ends it). Cut before escaping, so no escape is
    /// cut in half.
    private static func shown(_ value: String?) -> String { value.map { DiscordMarkdown.escaped(MessageText.clip($0, limit: 60)) } ?? "unknown" }

    /// Discord's own timestamp markup: each agent sees it in their time zone, relative.
    private static func when(_ date: Date) -> String { "<t:\(Int(date.timeIntervalSince1970)):R>" }
}
