import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Edits and deletes of the user's own messages: in the outbox while they wait there (before
/// Discord has any of them), else in Discord; then in the mirror. One a delivery is posting right
/// now (Discord slow or down) is changed in the mirror at once, and the delivery applies the
/// change when its attempt ends (`OutboxDelivery+UserChanges`): a user fixing a typo during an
/// outage never waits for Discord.
struct MessageEditor: Sendable {
    let users: UserSerializer
    let store: any UserStore
    let discord: DiscordClient<AnyClock>
    let sync: MirrorSync
    let ingestion: MirrorIngestion
    let outbox: OutboxDelivery
    let now: @Sendable () -> Date

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
            if parts[0].delivery != .sent { return try await editWaiting(parts[0], text: text, context: context) }
            let texts = NoteMarkers.posts(ofUserText: text)
            guard texts.count <= parts.count else { throw SupportFailure.editTooLong(needed: texts.count, original: parts.count) }
            let first = parts[0].id
            var ids: [String] = []
            for (index, part) in parts.enumerated() {
                if index < texts.count {
                    let edited = try await discord.editMessage(
                        try await discordID(of: part).description, in: thread.description, content: texts[index])
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
            if parts[0].delivery != .sent {
                // Still in the outbox (waiting, or failed): Discord never sees it, or loses what
                // reached it of a failed one (the parts before the one Discord refused).
                let removed = try await withQueue(of: context.id, for: parts[0]) {
                    let item = try await kept(parts[0], of: context.id)
                    for posted in item.postedParts { try await deleteInDiscord(posted, in: thread) }
                    try await store.removeOutboxItem(parts[0].id)
                }
                // Being posted: deleted in the mirror now, in Discord (or the outbox) by the delivery.
                if !removed { try await requireChangeableBeside(parts[0], of: context.id) }
                guard let record = context.record else { return }
                try await ingestion.apply(parts.map { .deleted($0.id, thread: $0.threadID) }, thread: parts[0].threadID, record: record)
                return
            }
            for part in parts { try await deletePart(part, in: thread, context: context) }
        }
    }

    /// The outbox's item of a message not delivered yet that the user may change: nothing of it
    /// in Discord, or it failed after some of its parts got there. (An item part-way delivered
    /// and still queued is the deliverer's until it is done: 409.)
    private func kept(_ message: MirroredMessage, of owner: UserID) async throws -> OutboxItem {
        guard let item = try await store.outboxItem(message.id), item.owner == owner, item.postedParts.isEmpty || !item.isQueued
        else { throw SupportFailure.delivering }
        return item
    }

    /// A new text for a message the outbox keeps: it waits again (a failed one is tried anew) with
    /// the new text, which is what Discord gets. A failed message some of whose parts reached
    /// Discord is tried again from the part Discord refused, with its own text only: 409
    /// `partly_delivered` for another (the posts made cannot take it; delete it instead).
    private func editWaiting(_ message: MirroredMessage, text: String, context: UserContext) async throws -> SupportMessage {
        let time = now()
        let changed = try await withQueue(of: context.id, for: message) {
            var item = try await kept(message, of: context.id)
            guard item.postedParts.isEmpty || item.content == text else { throw SupportFailure.partlyDelivered }
            (item.content, item.failure, item.attempts, item.nextAttempt) = (text, nil, 0, time)
            try await store.updateOutboxItem(item)
        }
        var row = message
        guard changed else {
            // Being posted: the new text is the mirror's now (its delivery unchanged), Discord's
            // (or the next attempt's) when the attempt ends. It must fit the one post being made.
            try await requireChangeableBeside(message, of: context.id)
            guard NoteMarkers.posts(ofUserText: text).count == 1 else { throw SupportFailure.delivering }
            (row.content, row.editedAt) = (text, OutboxIntake.timestamp(time))
            try await ingestion.saveOutboxChange(row, owner: context.id)
            return SupportMessage(row)
        }
        (row.content, row.editedAt, row.delivery, row.deliveryError) = (text, OutboxIntake.timestamp(time), .queued, nil)
        try await ingestion.saveOutboxChange(row, owner: context.id)
        outbox.wake()
        return SupportMessage(row)
    }

    /// Runs `body` holding the user's outbox queue, which a delivery holds while it posts (outside
    /// the user's lock); false, without running it, while one does. A failed message needs no
    /// hold: no delivery posts it until it waits again (its failure is written by the delivery
    /// that tried it, and the user's lock, held here, orders that write and this change).
    private func withQueue(of owner: UserID, for message: MirroredMessage, _ body: () async throws -> Void) async throws -> Bool {
        if message.delivery == .failed {
            try await body()
            return true
        }
        let holder = "edit-" + UUID().uuidString
        let time = now()
        guard try await store.claimOutbox(of: owner, holder: holder, until: time.addingTimeInterval(30), now: time) else { return false }
        do {
            try await body()
        } catch {
            try? await store.releaseOutbox(of: owner, holder: holder)
            throw error
        }
        try await store.releaseOutbox(of: owner, holder: holder)
        return true
    }

    /// A message a delivery is posting may be changed beside it when it is one post of which
    /// nothing reached Discord before (`OutboxDelivery.changesBeside`): 409 `delivering` otherwise
    /// (a message part-way delivered is the deliverer's until it is done).
    private func requireChangeableBeside(_ message: MirroredMessage, of owner: UserID) async throws {
        guard let item = try await store.outboxItem(message.id), item.owner == owner, OutboxDelivery.changesBeside(item) else {
            throw SupportFailure.delivering
        }
    }

    /// Discord's id of a post of the user's: the first part of a message accepted by the outbox
    /// has ThreadDesk's id in the mirror.
    private func discordID(of part: MirroredMessage) async throws -> Snowflake {
        try await store.discordIDs(of: [part.id])[part.id] ?? part.id
    }

    private func deletePart(_ part: MirroredMessage, in thread: Snowflake, context: UserContext) async throws {
        try await deleteInDiscord(try await discordID(of: part), in: thread)
        guard let record = context.record else { return }
        try await ingestion.apply([.deleted(part.id, thread: thread)], thread: thread, record: record)
    }

    /// Deletes a post in Discord; one already gone is no error (the mirror just learns it).
    private func deleteInDiscord(_ discordID: Snowflake, in thread: Snowflake) async throws {
        do {
            try await discord.deleteMessage(discordID.description, in: thread.description)
        } catch .api(let error) where error.status == 404 {
        } catch {
            throw error
        }
    }

    /// Runs `body` with every post of the user's message `messageID` (first part first), under the
    /// user's lock; 404 for anything that is not the user's own visible message in their thread.
    private func withOwnMessage<T: Sendable>(
        _ messageID: Snowflake, for id: UserID,
        _ body: ([MirroredMessage], Snowflake, inout UserContext) async throws -> T
    ) async throws -> T {
        guard let record = try await store.user(id) else { throw SupportFailure.messageNotFound }
        let thread: Snowflake
        if let current = record.threadID.flatMap({ Snowflake($0) }) {
            guard try await sync.ensureCurrent(current, owner: id) else { throw SupportFailure.messageNotFound }
            thread = current
        } else if let pending = record.pendingThread.flatMap({ Snowflake($0) }) {
            thread = pending
        } else {
            throw SupportFailure.messageNotFound
        }
        return try await users.withUser(id) { context in
            guard context.record?.threadID ?? context.record?.pendingThread == thread.description,
                let target = try await store.mirroredMessages([messageID]).first,
                target.threadID == thread, target.author == .user, target.visible, !target.deleted
            else { throw SupportFailure.messageNotFound }
            let parts = try await store.mirroredParts(of: target.partOf ?? target.id).filter { !$0.deleted && $0.author == .user }
            guard !parts.isEmpty else { throw SupportFailure.messageNotFound }
            return try await body(parts, thread, &context)
        }
    }
}
