import Foundation
import ThreadDeskWire
import DiscordREST
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// Keeps each conversation's course as messages enter the mirror (a `MirrorRecorder`: under the
/// user's lock, before anyone hears of the merge): the user's message opens a conversation or
/// starts a wait, and cancels a scheduled close; an agent's answer ends the wait. Automatic
/// answers (the team's voice: away and closing messages; the assistant) neither end a wait nor
/// count as a first response.
struct ConversationLog: MirrorRecorder {
    let store: any ConversationRecords
    /// Each app's support hours: a first response is counted in them.
    let catalog: AppCatalog
    /// The name automatic messages are posted under (the team's voice).
    let teamName: String
    let signals: LifecycleSignals
    /// `conversation.created` for the app's webhooks; nil: none.
    let webhooks: WebhookEvents?
    let logger: Logger
    let now: @Sendable () -> Date

    /// The user's message, as it is accepted: the conversation opens (`conversation.created`,
    /// committed before the message's own event) or its wait starts, and a scheduled close is
    /// cancelled, whether Discord has the message yet or not.
    func accepted(_ message: MirroredMessage, owner: UserID, in context: inout UserContext) async {
        guard message.author == .user else { return }
        do {
            let write = try await store.conversationUserWrote(owner, thread: message.threadID, at: now())
            if write.opened {
                webhooks?.record(
                    .conversationCreated, app: owner.app, owner: owner, data: ConversationEvent(write.conversation), at: write.conversation.openedAt,
                    in: &context)
            }
            if let due = write.cancelledClose { signals.closeCancelled(LifecycleSignals.Cancelled(owner: owner, thread: message.threadID, due: due)) }
            signals.wake()
        } catch {
            logger.warning("Could not note the user's message in their conversation", metadata: ["user": "\(owner.logValue)", "error": "\(error)"])
        }
    }

    /// Support's messages as they enter the mirror (the user's were noted when accepted).
    func record(_ intake: MirrorIntake) async {
        for message in intake.shown where message.author != .user {
            do {
                let byAgent = message.author == .support && message.authorName != teamName
                let date = now()
                let hours = catalog.app(of: intake.owner)?.supportHours
                var counted: (@Sendable (Date) -> Double)?
                if let hours { counted = { opened in Self.supportSeconds(hours, from: opened, to: date) } }
                let answered = try await store.conversationSupportWrote(
                    intake.owner, thread: intake.thread, at: date, byAgent: byAgent, responseSeconds: counted)
                if answered != nil, byAgent { signals.wake() }
            } catch {
                logger.warning(
                    "Could not note a message in the user's conversation", metadata: ["user": "\(intake.owner.logValue)", "error": "\(error)"])
            }
        }
    }

    /// Support time between two dates in `hours` (a wait longer than the 800 days a timeline
    /// reads is counted up to them).
    static func supportSeconds(_ hours: SupportHours, from start: Date, to end: Date) -> Double {
        hours.timeline(from: start, to: end).openSeconds(from: start, to: end)
    }
}
