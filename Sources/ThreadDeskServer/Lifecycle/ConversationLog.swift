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

    func record(_ intake: MirrorIntake) async {
        for message in intake.shown {
            do {
                switch message.author {
                case .user:
                    let write = try await store.conversationUserWrote(intake.owner, thread: intake.thread, at: now())
                    if write.opened {
                        await webhooks?.record(
                            .conversationCreated, app: intake.owner.app, owner: intake.owner, data: ConversationEvent(write.conversation),
                            at: write.conversation.openedAt)
                    }
                    if let due = write.cancelledClose { signals.closeCancelled(LifecycleSignals.Cancelled(owner: intake.owner, thread: intake.thread, due: due)) }
                    signals.wake()
                case .support, .assistant:
                    let byAgent = message.author == .support && message.authorName != teamName
                    let date = now()
                    let hours = catalog.app(of: intake.owner)?.supportHours
                    var counted: (@Sendable (Date) -> Double)?
                    if let hours { counted = { opened in Self.supportSeconds(hours, from: opened, to: date) } }
                    let answered = try await store.conversationSupportWrote(
                        intake.owner, thread: intake.thread, at: date, byAgent: byAgent, responseSeconds: counted)
                    if answered != nil, byAgent { signals.wake() }
                }
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
