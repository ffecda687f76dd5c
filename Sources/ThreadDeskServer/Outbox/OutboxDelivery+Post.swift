import DiscordREST
import Foundation
import Logging
import Prometheus
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// One message's attempt: claimed, posted part by part outside the user's lock, its outcome kept.
extension OutboxDelivery {
    /// Discord took a message after failing: the queues waiting out the backoffs its outage built
    /// up (up to `retryCap`) are due now, every replica's (they read the store).
    func discordIsBack() async {
        do {
            let sooner = try await parts.store.retryWaitingOutbox(at: parts.time.now())
            if sooner > 0 { parts.logger.notice("Discord takes messages again; those waiting are delivered now", metadata: ["waiting": "\(sooner)"]) }
            wake()
        } catch {
            logFailure("Could not make the waiting messages due", error: error)
        }
    }

    /// How long a message of an app this replica does not serve waits before it is looked at again.
    static let appNotServedRetry: Duration = .seconds(600)

    /// The wait before the next attempt after `attempts` failed ones: doubling from `retryBase` up to `retryCap`.
    func backoff(after attempts: Int) -> Duration {
        min(parts.settings.retryCap, parts.settings.retryBase * Double(1 << min(max(attempts - 1, 0), 20)))
    }

    /// Takes (or keeps) `owner`'s queue for `OutboxSettings.hold`.
    func claim(_ owner: UserID) async throws -> Bool {
        let now = parts.time.now()
        return try await parts.store.claimOutbox(of: owner, holder: holder, until: now.addingTimeInterval(parts.settings.hold / .seconds(1)), now: now)
    }

    enum Outcome {
        /// In Discord, every part of it; or nothing left to do (deleted or delivered meanwhile).
        case delivered
        /// Refused for good: failed, and the next message goes on.
        case refused
        /// Not now: it and the user's later messages wait for their next attempt.
        case later
    }

    /// One message: read under the user's lock; posted outside it (a slow Discord holds up no
    /// send, read or edit of the user's: edits and deletes of queued messages wait for the queue's
    /// hold instead); then, under the lock again, what the posts changed is kept and the message
    /// leaves the outbox (an edit or delete after that goes to Discord, never to the outbox).
    func deliver(_ id: Snowflake, of owner: UserID) async throws -> Outcome {
        let fence = OutboxFence(holder: holder, now: parts.time.now())
        let found = try await parts.users.withUser(owner) { context -> (UserRecord, OutboxItem)? in
            guard let record = context.record, let item = try await parts.store.outboxItem(id), item.isQueued, item.owner == owner else { return nil }
            // Changed by the user during an earlier attempt: this one posts what they want now.
            guard let wanted = try await applyingUserChange(to: item, fence: fence) else { return nil }
            return (record, wanted)
        }
        guard case (let record, var item)? = found else { return .delivered }
        let pieces = OutboxNonce.posts(of: item)
        // The posts' own view of the user: the thread they make, the notes a new thread gets.
        var posting = UserContext(id: owner, record: record, keptResult: nil)
        var posted: [DiscordMessage] = []
        // The notes a new thread got, taken into the mirror with the posts, under the user's lock.
        var notes: [DiscordMessage] = []
        var firstGone = false
        do {
            for index in item.postedParts.count..<pieces.count {
                // The hold lasts one post: renewed before each, so a replica that dies frees its queues soon.
                if index > 0 || !posted.isEmpty { guard try await claim(owner) else { throw OutboxHoldLost() } }
                let message = try await parts.traces.span("discord.post-message", kind: .client, attributes: parts.traces.isOn ? ["threaddesk.part": .int64(Int64(index))] : [:]) { _ in
                    try await parts.threads.post(pieces[index], in: &posting, from: nil, mayStartThread: item.mayStartThread, notes: &notes)
                }
                guard let discordID = Snowflake(message.id) else { throw DiscordError.invalidResponse("a message id that is no snowflake") }
                if index == 0, item.kind == .message { try await parts.store.saveMirrorAlias(discordID: discordID, messageID: item.id, owner: owner) }
                item.postedParts.append(discordID)
                posted.append(message)
                // Kept at once, the last too when the user changed the message meanwhile: an
                // attempt whose keeping fails (the change's edit in Discord) leaves the next one
                // the post to change, never the message to post again.
                if index + 1 < pieces.count {
                    try await parts.store.updateOutboxItem(item, fence: fence)
                } else if try await userChange(of: item, held: message) != nil {
                    try await parts.store.updateOutboxItem(item, fence: fence)
                }
            }
            // Finished after an attempt that stopped part-way (a passing failure, or a retry of a
            // message Discord refused part-way): the posts the earlier attempts made, as Discord
            // has them, join these, so the mirror takes in the whole message as after a delivery
            // in one go. A post deleted in Discord since is left out (its first: the message is
            // deleted, as any message of the user's deleted in Discord).
            let earlier = Array(item.postedParts.dropLast(posted.count))
            if !earlier.isEmpty {
                let found = try await earlierPosts(earlier, of: item, thread: posting.record?.threadID)
                posted = found.posts + posted
                firstGone = found.firstGone
            }
        } catch {
            // What was posted before the failure is kept (the next attempt goes on after it).
            if !posted.isEmpty { try await keep(posted, notes: notes, of: item, from: posting, removing: false, fence: fence) }
            // The thread is gone (or locked) and no new one was made: the user's messages wait in a
            // placeholder again, where the user sees them, until a send may make the new thread.
            if posted.isEmpty, record.threadID != nil, error is DeviceCheckFailure { try await leaveLostThread(item) }
            if error is ThreadService.AppNotServed {
                // Not this replica's app (any more, or not yet: a replica whose apps file is older
                // than another's, during a rolling restart): the message waits, untouched, for a
                // replica that serves its app, or for `admin app delete`.
                item.nextAttempt = parts.time.now().addingTimeInterval(Self.appNotServedRetry / .seconds(1))
                try await parts.store.updateOutboxItem(item, fence: fence)
                parts.logger.notice("A message of an app this replica does not serve waits", metadata: ["app": "\(owner.app)"])
                return .later
            }
            if let refusal = Self.refusal(error) {
                try await refuse(item, refusal, fence: fence, owner: owner)
                return .refused
            }
            if case .rateLimited(let wait)? = error as? DiscordError {
                // Discord's pace (a bucket's turn further off than the call's budget): the message
                // is tried when the turn comes, and no failure counts toward its backoff.
                item.nextAttempt = parts.time.now().addingTimeInterval(wait / .seconds(1))
            } else {
                item.attempts += 1
                item.nextAttempt = parts.time.now().addingTimeInterval(backoff(after: item.attempts) / .seconds(1))
            }
            try await parts.store.updateOutboxItem(item, fence: fence)
            // Discord down (no answer, or a 5xx; not a 4xx about this message, nor its pace): its
            // return makes every waiting queue due.
            if let failure = error as? DiscordError, Self.meansDiscordIsDown(failure) {
                discordFailing.withLock { $0 = true }
            }
            parts.metrics.outboxFailure(code: "passing", app: owner.app)
            logFailure("Discord did not take a message; it waits in the outbox", error: error, owner: owner)
            return .later
        }
        try await keep(posted, notes: notes, of: item, from: posting, removing: true, fence: fence, firstGone: firstGone)
        if discordFailing.withLock({ failing in defer { failing = false }; return failing }) { await discordIsBack() }
        if item.kind == .message {
            parts.metrics.posted(app: owner.app)
            if !item.files.isEmpty { parts.metrics.files.uploaded.increment(by: Int64(item.files.count)) }
        }
        return .delivered
    }
}
