import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

extension MirrorIngestion {
    /// How far Discord's clock (a post's snowflake) may lag ours (when its message was accepted).
    static let postClockSkew: TimeInterval = 300

    /// The outbox's messages (and parts) that posts of the user's read from Discord are, by their
    /// text: a read shows no nonce (Discord keeps none), so a post made in the moment before the
    /// delivery kept its alias would otherwise enter the mirror as a second message. Only posts the
    /// mirror has never seen, made after the message was accepted, each matched once, in order.
    /// - Parameter posts: The user's visible posts with neither nonce nor alias, Discord's ids.
    /// - Returns: For each post matched, the accepted message's id and the part it is.
    func outboxPosts(_ posts: [MirroredMessage], owner: UserID) async throws -> [Snowflake: (id: Snowflake, part: Int)] {
        guard !posts.isEmpty, try await store.outboxUsage(of: owner).count > 0 else { return [:] }
        let known = Set(try await store.mirroredMessages(posts.map(\.id)).map(\.id))
        let unknown = posts.filter { !known.contains($0.id) }.sorted { $0.id < $1.id }
        guard !unknown.isEmpty else { return [:] }
        let items = try await store.outbox(of: owner).filter { $0.kind == .message }
        var taken: Set<String> = []
        var matched: [Snowflake: (id: Snowflake, part: Int)] = [:]
        for post in unknown {
            for item in items where item.acceptedAt.timeIntervalSince(post.id.date) <= Self.postClockSkew {
                let texts = item.content.isEmpty && !item.files.isEmpty ? [""] : NoteMarkers.posts(ofUserText: item.content)
                let part = texts.indices.first { index in
                    !taken.contains("\(item.id)/\(index)") && NoteMarkers.userText(posted: texts[index]) == post.content
                        && (index > 0 || post.attachments.count == item.files.count)
                }
                guard let part else { continue }
                taken.insert("\(item.id)/\(part)")
                matched[post.id] = (item.id, part)
                break
            }
        }
        return matched
    }
}
