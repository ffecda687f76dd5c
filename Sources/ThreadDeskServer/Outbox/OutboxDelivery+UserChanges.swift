import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// What the user did to a message while an attempt was posting it. An edit or delete then is
/// accepted at once into the mirror's row (the user sees it: `MessageEditor`), and the row is
/// the truth of what they want: the delivery applies it when its attempt ends. Not posted, the new
/// text goes, or nothing; posted, the post is edited or deleted in Discord.
extension OutboxDelivery {
    enum UserChange: Equatable {
        case deleted
        case edited(String)
    }

    /// How `item`'s row differs from it (one message of one post, nothing of it in Discord before
    /// this attempt: the only kind `MessageEditor` changes beside a delivery); nil when it does not.
    /// With `held`, the one post this attempt made (in `item.postedParts`): the row is compared
    /// with what Discord holds, not with the item (an earlier attempt whose answer was lost may
    /// have posted the old text, which Discord gave back for its nonce).
    func userChange(of item: OutboxItem, held post: DiscordMessage? = nil) async throws -> UserChange? {
        var before = item
        if post != nil { before.postedParts.removeAll() }
        guard Self.changesBeside(before), let row = try await parts.store.mirroredMessages([item.id]).first else { return nil }
        if row.deleted { return .deleted }
        guard let post else { return row.content == item.content ? nil : .edited(row.content) }
        return NoteMarkers.posts(ofUserText: row.content).first == post.content ? nil : .edited(row.content)
    }

    /// Whether the user may change `item` while a delivery posts it: a message of one post, of
    /// which nothing reached Discord before.
    static func changesBeside(_ item: OutboxItem) -> Bool {
        item.kind == .message && item.postedParts.isEmpty && OutboxNonce.posts(of: item).count == 1
    }

    /// Under the user's lock, before a post is kept: the user's change applied to `post` in
    /// Discord. Nil when the user deleted the message (the post is gone from Discord too); the
    /// post as edited when they edited it. A Discord failure throws: the message stays queued and
    /// the next attempt (Discord keeps the post for its nonce) applies the change again.
    func applying(_ change: UserChange, to post: DiscordMessage) async throws -> DiscordMessage? {
        switch change {
        case .deleted:
            do {
                try await parts.threads.discord.deleteMessage(post.id, in: post.channelId)
            } catch {
                // Gone already: what the user wanted.
                guard error.apiError?.status == 404 else { throw error }
            }
            return nil
        case .edited(let text):
            let content = NoteMarkers.posts(ofUserText: text).first ?? text
            return try await parts.threads.discord.editMessage(post.id, in: post.channelId, content: content)
        }
    }

    /// At the start of an attempt, under the user's lock: `item` as the user now wants it (its new
    /// text kept for this attempt: a post an earlier attempt may have made, answered now for its
    /// nonce, is edited when kept), or nil when they deleted it and no earlier attempt can have
    /// reached Discord (it leaves the outbox; otherwise this attempt posts, and deletes when kept).
    func applyingUserChange(to item: OutboxItem, fence: OutboxFence) async throws -> OutboxItem? {
        guard let change = try await userChange(of: item) else { return item }
        var item = item
        switch change {
        case .deleted:
            guard item.attempts == 0 else { return item }
            _ = try await parts.store.removeOutboxItem(item.id, fence: fence)
            return nil
        case .edited(let text):
            item.content = text
            _ = try await parts.store.updateOutboxItem(item, fence: fence)
            return item
        }
    }
}
