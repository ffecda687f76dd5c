import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// Takes a user's message or diagnostics report into the outbox, inside the user's transaction:
/// the caps, the thread budget a user's first item charges, the item, and for what the user sees
/// its `queued` row in the mirror, all kept with the transaction's commit. After the commit,
/// `announce` wakes the delivery (and the user's streams, for a row they see).
struct OutboxIntake: Sendable {
    let store: any UserStore
    let threads: ThreadService
    let ingestion: MirrorIngestion
    let outbox: OutboxDelivery
    let ids: MessageIDs
    let settings: OutboxSettings
    let traces: Traces
    let now: @Sendable () -> Date

    /// What was accepted: the item's id, and where the user sees it (nil for a note they never see).
    struct Accepted: Sendable {
        let id: Snowflake
        let owner: UserID
        let shownIn: Snowflake?
    }

    /// Keeps `content` and `files` in the outbox (and, when `shown`, a `queued` row in the user's
    /// thread, or in the placeholder that holds a threadless user's messages), with `context`.
    /// - Parameters:
    ///   - kind: A message of the user's, or a diagnostics report (its summary as `content`).
    ///   - shown: Whether the user sees it in the conversation (a diagnostics report is a note).
    ///   - mayStartThread: Whether a user without a thread gets one (App Attest's assertion).
    /// - Throws: `SupportFailure.outboxFull`, `SupportFailure.limitReached` (the thread budget),
    ///   `DeviceCheckFailure.assertionRequired`, `SupportFailure.notAuthenticated`, the store's errors.
    func accept(
        _ kind: OutboxItem.Kind, content: String, files: [OutboxItem.File], suggestionID: String? = nil, idempotencyKey: String,
        shown: Bool, in context: inout UserContext, from address: String, mayStartThread: Bool
    ) async throws -> Accepted {
        guard var record = context.record else { throw SupportFailure.notAuthenticated }
        try await checkRoom(for: content.utf8.count + files.reduce(0) { $0 + $1.bytes.count }, owner: record.id)
        let time = now()
        let thread: Snowflake
        if let current = record.threadID.flatMap({ Snowflake($0) }) ?? record.pendingThread.flatMap({ Snowflake($0) }) {
            thread = current
        } else {
            // The first item makes the thread: its limits say yes now, not when Discord is asked.
            guard mayStartThread else { throw DeviceCheckFailure.assertionRequired }
            try await threads.quotas.charge(.thread, address: address)
            thread = ids.next(at: time)
            try await store.saveMirrorThread(MirrorThread(id: thread, owner: record.id, complete: true, lastActivity: time))
            record.pendingThread = thread.description
        }
        let id = ids.next(at: time)
        context.enqueued.append(
            OutboxItem(
                id: id, owner: record.id, kind: kind, content: content, files: files, idempotencyKey: idempotencyKey,
                suggestionID: suggestionID, acceptedAt: time, mayStartThread: mayStartThread, traceparent: traces.traceparent()))
        if shown {
            let row = try await queuedRow(id, content: content, files: files, in: thread, at: time)
            context.accepted.append(row)
            await ingestion.recordAccepted(row, owner: record.id, in: &context)
        }
        // What the user writes may ask the assistant for a draft: its cost counts against the
        // network it came from too (`ASSIST_TOKENS_PER_NETWORK_PER_DAY`).
        if kind == .message { record.live.assistNetwork = AssistKey.network(Quotas.split(address).network) }
        record.updatedAt = time
        context.record = record
        return Accepted(id: id, owner: record.id, shownIn: shown ? thread : nil)
    }

    /// Runs `accepting` (a user's transaction that calls `accept`) again, with new ids, when the
    /// store refused an id another replica took in the same millisecond (`OutboxIDTaken`: two
    /// processes drew the same worker bits): nothing was kept, and the next ids differ.
    static func retryingTakenIDs<T>(_ accepting: () async throws -> T) async throws -> T {
        for _ in 1..<maxIDAttempts {
            do {
                return try await accepting()
            } catch is OutboxIDTaken {
                continue
            }
        }
        return try await accepting()
    }

    static let maxIDAttempts = 3

    /// After the accepting transaction committed: the delivery wakes, and the user's streams hear
    /// of a message they see.
    func announce(_ accepted: Accepted) {
        if let thread = accepted.shownIn { ingestion.announceAccepted(owner: accepted.owner, thread: thread) }
        outbox.wake()
    }

    /// The mirror's row of a message the user sees while it waits: files served from the outbox
    /// until Discord has them (then under Discord's ids).
    private func queuedRow(_ id: Snowflake, content: String, files: [OutboxItem.File], in thread: Snowflake, at time: Date) async throws -> MirroredMessage {
        var row = MirroredMessage(
            id: id, threadID: thread, author: .user, authorID: nil, authorUsername: "", authorName: nil, type: 0, content: content,
            attachments: files.enumerated().map { index, file in
                MirroredMessage.Attachment(
                    id: ids.next(at: time), filename: file.filename, size: file.bytes.count, contentType: file.contentType,
                    url: OutboxFiles.url(index: index), proxyURL: "")
            },
            replyTo: nil, createdAt: Self.timestamp(time), editedAt: nil, visible: true)
        row.delivery = .queued
        if let number = try await store.nextEventSequences(1).first { (row.eventSeq, row.shownSeq) = (number, number) }
        return row
    }

    /// 503 `busy` when the item would take the deployment's or the user's outbox past its cap. The
    /// bytes counted are those still to be delivered: refused messages' files are capped on their
    /// own (`FailedFiles`), so no user's refusals fill anyone's room. The user's count takes in
    /// their refused messages too (each waits for a retry or a delete).
    private func checkRoom(for size: Int, owner: UserID) async throws {
        let mine = try await store.outboxUsage(of: owner)
        if mine.count + 1 > settings.maxMessagesPerUser || mine.queuedBytes + size > settings.maxBytesPerUser {
            throw SupportFailure.outboxFull(scope: "yours", retryAfter: .seconds(30))
        }
        let all = try await store.outboxUsage(of: nil)
        if all.queuedBytes + size > settings.maxBytes { throw SupportFailure.outboxFull(scope: "the server's", retryAfter: .seconds(60)) }
    }

    /// Discord's timestamp format (ISO 8601, milliseconds, UTC) for a message accepted at `date`.
    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
