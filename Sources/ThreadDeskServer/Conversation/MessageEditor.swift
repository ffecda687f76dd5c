import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Edits and deletes of the user's own messages, in Discord and then in the mirror.
struct MessageEditor: Sendable {
    let users: UserSerializer
    let store: any UserRecords & MirrorStore
    let discord: DiscordClient<AnyClock>
    let sync: MirrorSync
    let ingestion: MirrorIngestion

    /// Replaces the text of one of the user's own messages in Discord. A send that took several
    /// Discord posts is edited as a whole: the new text is cut the same way and may not need more
    /// posts than the original (posts left over are deleted).
    /// - Parameters:
    ///   - messageID: The message (its first post) as the user knows it.
    ///   - text: The new text.
    ///   - id: The user, who must have written the message.
    /// - Returns: The message as the mirror has it now.
    /// - Throws: `SupportFailure.messageNotFound` for anything but the user's own visible message,
    ///   `SupportFailure.editTooLong` when the new text needs more posts, `DiscordError`.
    func edit(_ messageID: Snowflake, text: String, for id: UserID) async throws -> SupportMessage {
        try await withOwnMessage(messageID, for: id) { parts, thread, context in
            let texts = NoteMarkers.posts(ofUserText: text)
            guard texts.count <= parts.count else { throw SupportFailure.editTooLong(needed: texts.count, original: parts.count) }
            let first = parts[0].id
            var ids: [String] = []
            for (index, part) in parts.enumerated() {
                if index < texts.count {
                    let edited = try await discord.editMessage(part.id.description, in: thread.description, content: texts[index])
                    try await ingestion.ingestOwn(edited, partOf: parts.count > 1 ? first : nil, record: context.record)
                    ids.append(edited.id)
                } else {
                    try await deletePart(part, in: thread, context: context)
                }
            }
            guard let stored = try await store.mirroredMessages([first]).first else { throw SupportFailure.messageNotFound }
            var message = SupportMessage(stored)
            if parts.count > 1 {
                message.content = text
                message.partIds = ids
            }
            return message
        }
    }

    /// Deletes one of the user's own messages in Discord (every post of a split send).
    /// - Parameters:
    ///   - messageID: The message (its first post) as the user knows it.
    ///   - id: The user, who must have written the message.
    /// - Throws: `SupportFailure.messageNotFound` for anything but the user's own visible
    ///   message, `DiscordError` when Discord refuses (a post already gone is no error).
    func delete(_ messageID: Snowflake, for id: UserID) async throws {
        try await withOwnMessage(messageID, for: id) { parts, thread, context in
            for part in parts { try await deletePart(part, in: thread, context: context) }
        }
    }

    private func deletePart(_ part: MirroredMessage, in thread: Snowflake, context: UserContext) async throws {
        do {
            try await discord.deleteMessage(part.id.description, in: thread.description)
        } catch .api(let error) where error.status == 404 {
            // Already gone in Discord: the mirror just learns it.
        } catch {
            throw error
        }
        guard let record = context.record else { return }
        try await ingestion.apply([.deleted(part.id, thread: thread)], thread: thread, record: record)
    }

    /// Runs `body` with every post of the user's message `messageID` (first part first), under the
    /// user's lock; 404 for anything that is not the user's own visible message in their thread.
    private func withOwnMessage<T: Sendable>(
        _ messageID: Snowflake, for id: UserID,
        _ body: ([MirroredMessage], Snowflake, inout UserContext) async throws -> T
    ) async throws -> T {
        guard let thread = try await store.user(id)?.threadID.flatMap({ Snowflake($0) }),
            try await sync.ensureCurrent(thread, owner: id)
        else { throw SupportFailure.messageNotFound }
        return try await users.withUser(id) { context in
            guard context.record?.threadID == thread.description, let target = try await store.mirroredMessages([messageID]).first,
                target.threadID == thread, target.author == .user, target.visible, !target.deleted
            else { throw SupportFailure.messageNotFound }
            let parts = try await store.mirroredParts(of: target.partOf ?? target.id).filter { !$0.deleted && $0.author == .user }
            guard !parts.isEmpty else { throw SupportFailure.messageNotFound }
            return try await body(parts, thread, &context)
        }
    }
}
