import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// Why a user's data goes; said in the thread's note and counted in `/metrics`.
public enum ErasureReason: String, Sendable, Hashable {
    /// The user asked, through the app (`DELETE /v1/me`).
    case request
    /// An operator did it for them (`threaddesk admin user delete`).
    case admin
    /// Inactive past `RETENTION_DAYS`.
    case retention
}

/// Erases a user for good: first their Discord threads are settled as `USER_DELETION` says
/// (locked with a note, or deleted), then the store forgets everything of theirs in one
/// transaction, under the user's lock throughout. Discord comes first so that a refusal leaves
/// everything as it was, for a retry; a thread already gone or locked counts as settled.
struct UserEraser: Sendable {
    let store: any UserErasure & GlobalValues & JobLocks
    let discord: DiscordClient<AnyClock>
    let deletion: UserDeletion
    /// Ends the user's open event streams (here, and on every replica); nil outside a server.
    let hub: LiveHub?
    /// Forgets the threads' status tags; nil when they are off or outside a server.
    let status: StatusTags?
    /// Finds a thread an attempt of ours made and the store never kept (its answer lost).
    let unrecorded: UnrecordedThreads
    let metrics: ServerMetrics
    let logger: Logger
    /// The server's clock: a wait for a thread's status lock is on it.
    var time: ServerTime = .system

    /// Erases `id`; false when there was nothing of theirs (already erased, or never known), or
    /// when they were active since `inactiveSince` (checked under their lock: retention never
    /// takes a user who came back after being listed).
    /// - Parameters:
    ///   - id: The user to erase.
    ///   - reason: Why, said in the thread's note and counted.
    ///   - inactiveSince: For retention: the user is kept when active since then.
    /// - Throws: `DiscordError` when a thread cannot be settled (nothing is erased then: a retry
    ///   starts over), and the store's errors.
    @discardableResult
    func erase(_ id: UserID, reason: ErasureReason, inactiveSince: Date? = nil) async throws -> Bool {
        var threads: [Snowflake] = []
        /// Threads whose status tags were stopped for the erasure: they resume if it fails.
        var stopped: [Snowflake] = []
        let erased: Bool
        do {
            erased = try await store.eraseUser(id) { context in
                if let inactiveSince, Self.activeSince(inactiveSince, context) { throw CameBack() }
                threads = context.threadIDs
                let gone = Set(context.threads.filter(\.gone).map(\.id))
                // Made by an attempt cut short: the user's all the same, settled like the others.
                threads += try await unrecorded.attempts(of: id).compactMap(Snowflake.init).filter { !threads.contains($0) }
                for thread in threads where !gone.contains(thread) {
                    try await StatusTags.markErased(thread, in: store, time: time)
                    stopped.append(thread)
                    try await settle(thread, of: id, reason: reason)
                }
                context.globalKeys = [ThreadNotes.unrecordedThreadKey(id)] + threads.map(StatusTags.key)
            }
        } catch {
            for thread in stopped { try? await store.setGlobalValue(StatusTags.key(thread), to: nil) }
            if error is CameBack { return false }
            throw error
        }
        for thread in threads { status?.forget(thread) }
        // Every token of theirs is gone: their streams find out and end.
        hub?.tokensChanged(id)
        if erased {
            metrics.usersErased(reason: reason.rawValue)
            logger.notice(
                "Erased a user's data", metadata: ["user": "\(id.logValue)", "reason": "\(reason.rawValue)", "threads": "\(threads.count)"])
        }
        return erased
    }

    private struct CameBack: Error {}

    private static func activeSince(_ date: Date, _ context: ErasureContext) -> Bool {
        (context.record.map { $0.updatedAt >= date } ?? false) || context.threads.contains { $0.lastActivity >= date }
    }

    /// Does to one thread what `USER_DELETION` says.
    private func settle(_ thread: Snowflake, of id: UserID, reason: ErasureReason) async throws(DiscordError) {
        switch deletion {
        case .delete:
            do {
                try await discord.deleteChannel(thread.description)
            } catch {
                guard error.apiError?.threadIsGone == true else { throw error }
            }
        case .lock:
            let note: DiscordMessage?
            do {
                // The same nonce on a retry: Discord answers with the note it already has.
                note = try await discord.createMessage(
                    in: thread.description,
                    .init(content: Self.note(reason), nonce: ThreadNotes.nonce("erased", id: id, thread.description)))
            } catch {
                if error.apiError?.threadIsGone == true { return }
                // Locked already (an earlier attempt, or an agent): the thread is as it should be but for the archive.
                guard error.apiError?.threadIsLocked == true else { throw error }
                note = nil
            }
            do {
                _ = try await discord.modifyThread(thread.description, archived: true, locked: true)
            } catch {
                guard let failure = error.apiError, failure.threadIsGone || failure.threadIsLocked else {
                    // Not erased after all: no note may say it was (a retry posts it again).
                    if let note { try? await discord.deleteMessage(note.id, in: thread.description) }
                    throw error
                }
            }
        }
    }

    /// What support reads in a thread kept for their records.
    /// - Parameter reason: Why the user's data went.
    static func note(_ reason: ErasureReason) -> String {
        let why =
            switch reason {
            case .request: "The user asked for their data to be deleted"
            case .admin: "This user's data was deleted on request (threaddesk admin)"
            case .retention: "This user was inactive past the retention period (RETENTION_DAYS)"
            }
        return ":ninja: \(why): ThreadDesk no longer keeps anything of theirs, and their app starts afresh. "
            + "This thread is locked and kept only for your records; delete it if you should not keep it."
    }
}
