import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The `data` of the conversation's webhook events (`conversation.created`, `.closed`,
/// `.reopened`, `rating.submitted`): the conversation as the store keeps it, with the user's id.
struct ConversationEvent: Encodable, Sendable {
    struct Rating: Encodable, Sendable {
        let score: Int
        let comment: String?
        let ratedAt: String
    }

    let userId: String
    let conversationId: String
    let threadId: String?
    let openedAt: String
    let firstResponseAt: String?
    let closedAt: String?
    /// `agent`, `scheduled` or `auto`.
    let closedBy: String?
    let rating: Rating?

    init(_ conversation: ConversationRecord) {
        let format = { (date: Date) in Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date) }
        userId = conversation.owner.local.rawValue
        conversationId = String(conversation.id)
        threadId = conversation.thread?.description
        openedAt = format(conversation.openedAt)
        firstResponseAt = conversation.firstResponseAt.map(format)
        closedAt = conversation.closedAt.map(format)
        closedBy = conversation.closedBy?.rawValue
        rating = conversation.rating.map { Rating(score: $0.score, comment: $0.comment, ratedAt: format($0.ratedAt)) }
    }
}
