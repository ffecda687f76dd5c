import Deadlines
import DiscordREST
import Foundation
import Logging
import ThreadDeskStore

/// Sends a stop or a crash cut off: a draft left `sending` may or may not have reached the user.
/// Each becomes `uncertain` and its note warns, so that no agent reads "not sent yet" under an
/// answer the user may have, and a click first tells what may have happened.
extension Drafts {
    static let recoveryWorkName = "drafts-recovery"
    /// The most cut-off sends given up at one start (each is a note to edit).
    static let recoveredAtOnce = 500

    /// At start, every send left `sending` is given up: at once when it is from before this
    /// process began on a store only this process uses (SQLite), or when it is
    /// `sendingGivenUpAfter` old; any other once it is that old, as another replica (or a click
    /// this process just took) may still be sending it: a click's whole time is less than that.
    func recoverCutOffSends() async {
        let drafts: [AssistDraft]
        do {
            drafts = try await Deadline.within(.seconds(30)) { try await self.parts.store.draftsBeingSent(limit: Self.recoveredAtOnce) }
        } catch {
            parts.logger.notice("Could not look for drafts whose send was cut off", metadata: ["error": "\(error)"])
            return work.end(Self.recoveryWorkName)
        }
        let alone = parts.store.bus == nil
        for draft in drafts {
            let left = Self.sendingGivenUpAfter - parts.time.now().timeIntervalSince(draft.updatedAt)
            if !(alone && draft.updatedAt <= startedAt), left > 0 {
                do {
                    try await work.endSleepThenBegin(Self.recoveryWorkName, for: .milliseconds(Int64(left * 1000) + 1), on: parts.time)
                } catch {
                    return
                }
            }
            do {
                // Only if nothing touched it since it was read: a click meanwhile decided for itself.
                _ = try await Deadline.within(Self.recoveryTime) {
                    try await self.giveUpSending(draft.id, interaction: draft.interactionID ?? "") {
                        $0.state == .sending && $0.updatedAt == draft.updatedAt
                    }
                }
            } catch {
                parts.logger.notice("Could not give up a draft's cut-off send", metadata: ["draft": "\(draft.id)", "error": "\(error)"])
            }
        }
        work.end(Self.recoveryWorkName)
    }

    /// The cut-off send of draft `id` becomes `uncertain` when `stale` says so of it under its
    /// user's lock, its note warning everyone (or, when the conversation moved on, closed); what
    /// an agent who clicked is told.
    func giveUpSending(_ id: Snowflake, interaction: String, when stale: @escaping @Sendable (AssistDraft) -> Bool) async throws -> String {
        let outcome = try await transition(id, by: nil, interaction: interaction, to: .uncertain, when: stale)
        guard case .changed(let draft) = outcome else { return outcome.message }
        parts.logger.warning("A draft's send was cut off before its outcome was noted; it may have reached the user", metadata: ["draft": "\(id)"])
        if await closeIfOutdated(draft) {
            return "This draft's send was cut off (ThreadDesk stopped meanwhile) and may have reached the user; the conversation has moved on since, so the draft is closed. Look at the thread."
        }
        if let note = draft.noteID { await editNote(note, in: draft.thread, Self.mayHaveBeenSent(draft, why: "its send was cut off")) }
        return "This draft's send was cut off (ThreadDesk stopped meanwhile) and may have reached the user. Look at the thread; click Send again only if it is not there."
    }
}
