import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// What a delivery keeps once Discord took a message (or part of it): the thread, the mirror,
/// the placeholder's messages, the notes that follow.
extension OutboxDelivery {
    /// The posts `ids` of `item` an earlier attempt made, as Discord has them now, from the thread
    /// the message's first post is in (`thread` when the mirror does not say); those deleted in
    /// Discord since are left out, and whether the first was.
    func earlierPosts(_ ids: [Snowflake], of item: OutboxItem, thread: String?) async throws -> (posts: [DiscordMessage], firstGone: Bool) {
        let thread = try await parts.store.mirroredMessages([item.id]).first?.threadID.description ?? thread ?? ""
        var posts: [DiscordMessage] = []
        var firstGone = false
        for (index, id) in ids.enumerated() {
            do {
                posts.append(try await parts.threads.discord.message(id.description, in: thread))
            } catch {
                guard error.apiError?.status == 404 else { throw error }
                if index == 0 { firstGone = true }
            }
        }
        return (posts, firstGone)
    }

    /// Under the user's lock: the thread the posts made (or adopted) and its notes into the
    /// record, the placeholder's messages into the thread, the posts into the mirror, and the
    /// message out of the outbox once all of it is posted; then the note of the suggestion seen
    /// and the away message, as after any message of the user's.
    func keep(
        _ posted: [DiscordMessage], notes: [DiscordMessage], of item: OutboxItem, from posting: UserContext, removing: Bool, fence: OutboxFence,
        firstGone: Bool = false
    ) async throws {
        try await parts.users.withUser(item.owner) { context in
            guard var record = context.record, let after = posting.record else { return }
            // The user edited or deleted the message while it was being posted: Discord's post
            // follows before it is kept (the mirror's row already shows the change).
            var posted = posted
            var firstGone = firstGone
            var userDeleted = false
            if removing, posted.count == 1, item.postedParts.count == 1, let change = try await userChange(of: item, held: posted[0]) {
                if let changed = try await applying(change, to: posted[0]) {
                    posted[0] = changed
                } else {
                    (posted, firstGone, userDeleted) = ([], true, true)
                }
            }
            if after.threadID != nil, after.threadID != record.threadID {
                (record.threadID, record.installation, record.pendingInstallation) = (after.threadID, after.installation, after.pendingInstallation)
                record.updatedAt = parts.time.now()
            }
            context.record = record
            try await adoptPlaceholder(&context)
            let bot = try await parts.ingestion.bot.id()
            let split = OutboxNonce.isSplit(item)
            // Part-way (`removing` false), the mirror waits for the whole message (`apply`).
            for message in posted {
                guard let thread = Snowflake(message.channelId), let current = context.record else { continue }
                try await parts.ingestion.apply(
                    parts.ingestion.facts([message], bot: bot, owner: current.id, partOf: split ? item.id : nil), thread: thread, record: current,
                    delivering: removing ? item.id : nil)
            }
            for note in notes {
                guard let thread = Snowflake(note.channelId), let current = context.record else { continue }
                try await parts.ingestion.apply(parts.ingestion.facts([note], bot: bot, owner: current.id), thread: thread, record: current)
            }
            if removing, firstGone, let current = context.record, let row = try await parts.store.mirroredMessages([item.id]).first {
                try await parts.ingestion.apply([.deleted(item.id, thread: row.threadID)], thread: row.threadID, record: current)
            }
            guard removing else { return }
            try await parts.store.removeOutboxItem(item.id, fence: fence)
            // What the feature that enqueued a note does once it is in the thread (a crash note:
            // the rule's answer), under the same lock.
            if item.kind == .crash, let listener = parts.notes { await listener.delivered(item, posts: posted, in: &context) }
            // A diagnostics report is a note, and a message the user deleted is none: no note or
            // answer follows them.
            guard item.kind == .message, !userDeleted else { return }
            if let suggestion = item.suggestionID { await noteSuggestion(suggestion, item: item, in: context) }
            await parts.away?.answer(&context)
        }
    }

    /// The user's thread is gone: the record forgets it and `item`'s message moves into a
    /// placeholder thread (the user's next thread takes it over).
    func leaveLostThread(_ item: OutboxItem) async throws {
        try await parts.users.withUser(item.owner) { context in
            guard var record = context.record, record.threadID != nil else { return }
            record.threadID = nil
            let placeholder: Snowflake
            if let pending = record.pendingThread.flatMap({ Snowflake($0) }) {
                placeholder = pending
            } else {
                placeholder = parts.ids.next(at: parts.time.now())
                try await parts.store.saveMirrorThread(MirrorThread(id: placeholder, owner: record.id, complete: true, lastActivity: parts.time.now()))
                record.pendingThread = placeholder.description
            }
            record.updatedAt = parts.time.now()
            context.record = record
            if var row = try await parts.store.mirroredMessages([item.id]).first {
                row.threadID = placeholder
                try await parts.store.saveMirroredMessages([row])
            }
        }
    }

    /// A user whose first message made their thread: the placeholder's messages move into it.
    func adoptPlaceholder(_ context: inout UserContext) async throws {
        guard let pending = context.record?.pendingThread, let thread = context.record?.threadID.flatMap({ Snowflake($0) }) else { return }
        if let placeholder = Snowflake(pending) { try await parts.store.moveMirroredMessages(from: placeholder, to: thread) }
        context.record?.pendingThread = nil
    }

    /// A `:ninja:` note after the user's message naming the curated answer they saw before writing
    /// it, so the agent does not send it again. Posted once (nonce); a failure costs only the note.
    func noteSuggestion(_ id: String, item: OutboxItem, in context: UserContext) async {
        guard let answer = await parts.faq.book(for: context.id.app)?.answer(id), let record = context.record, let thread = record.threadID else { return }
        do {
            let posted = try await parts.threads.discord.createMessage(
                in: thread, .init(content: SuggestionNote.text(for: answer), nonce: ThreadNotes.nonce("suggestion", id: context.id, item.idempotencyKey, answer.id)))
            try? await parts.ingestion.ingestOwn(posted, record: record)
        } catch {
            parts.logger.warning("Could not post the note of the suggestion the user saw", metadata: ["error": "\(error)"])
        }
    }
}
