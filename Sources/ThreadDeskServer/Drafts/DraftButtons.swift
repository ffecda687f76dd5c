import ThreadDeskWire
import Logging
import DiscordREST
import Deadlines
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The draft note's buttons and the edit modal. Every answer but Edit's is first a deferred
/// update (Discord gives 3 s, a delivery may hold the user's lock longer); Edit answers with the
/// modal, which cannot be deferred, read without the lock. What a click changes is a
/// compare-and-set of the draft's state under its user's lock: a click delivered twice, two
/// agents, or two replicas act once.
extension Drafts {
    /// Whether the interaction is a draft's (a button or the edit modal ThreadDesk made).
    static func isDraftInteraction(_ interaction: DiscordInteraction) -> Bool {
        guard let id = interaction.component?.customId ?? interaction.modal?.customId else { return false }
        return DraftCustomID.isOurs(id)
    }

    func answer(_ interaction: DiscordInteraction) async throws {
        guard let member = interaction.member, let raw = interaction.component?.customId ?? interaction.modal?.customId else { return }
        guard let target = DraftCustomID(raw), let draft = try await parts.store.draft(target.draft),
            interaction.channelId == draft.thread.description, let app = parts.catalog.app(of: draft.owner), interaction.guildId == app.guildID
        else {
            // A button copied into another thread, or a draft erased with its user.
            try await reply(interaction, ephemeral: "This draft is not ThreadDesk's, or no longer exists.")
            return
        }
        let access = DeskAccess(parts.desk)
        guard access.allows(DiscordPermissions(string: member.permissions ?? "") ?? [], roles: member.roles) else {
            parts.logger.notice("A draft button of a member who may not use the desk was refused", metadata: ["interaction": "\(interaction)"])
            try await reply(interaction, ephemeral: "Only members with \(access.requirement) in the support forum can act on drafts.")
            return
        }
        // Sending under the assistant's name would pass the agent's reply off as an automatic answer.
        if [.send, .submitEdit].contains(target.action), parts.voice.isReserved(member.displayName, in: app.forumChannelID) {
            try await reply(interaction, ephemeral: Desk.reservedSpeaker(member.displayName))
            return
        }
        // A send cut off by a crash (or a stop past its drain) may have reached the user: the
        // draft says so, and waits for a click made knowing it, before anything is sent again.
        if draft.state == .sending, Self.canAct(on: draft, now: parts.time.now()), target.action != .discard {
            // Answered first: the lock and the note's edit may outlast Discord's 3 s.
            guard try await acknowledge(interaction) else { return }
            let now = parts.time.now()
            let told = try await giveUpSending(draft.id, interaction: interaction.id) { $0.state == .sending && Self.canAct(on: $0, now: now) }
            return try await followUp(interaction, told)
        }
        switch target.action {
        case .edit:
            guard Self.canAct(on: draft, now: parts.time.now()) else {
                try await reply(interaction, ephemeral: Self.already(draft))
                return
            }
            try await reply(interaction, .modal(DraftNote.editor(draft.text, draft: draft.id)))
        case .discard:
            guard try await acknowledge(interaction) else { return }
            let outcome = try await transition(draft.id, to: .discarded, by: member.displayName, interaction: interaction.id)
            guard case .changed(let discarded) = outcome else { return try await followUp(interaction, outcome.message) }
            if let note = discarded.noteID {
                await editNote(note, in: discarded.thread, DraftNote.settled("🗑️ Draft discarded by \(DiscordMarkdown.escaped(member.displayName)).", discarded.text, sources: discarded.faqIDs))
            }
        case .send:
            guard try await acknowledge(interaction) else { return }
            try await send(draft.id, text: draft.text, edited: false, by: member, interaction: interaction, app: app)
        case .submitEdit:
            guard try await acknowledge(interaction) else { return }
            let text = interaction.modal?.fields[DraftNote.inputID] ?? ""
            if let problem = Desk.replyProblem(text) { return try await followUp(interaction, problem) }
            try await send(draft.id, text: text, edited: true, by: member, interaction: interaction, app: app)
        }
    }

    /// Send: `posted` → `sending` is kept first; then the post and `sent`, under the user's lock.
    /// A webhook post has no nonce, so a lost answer leaves the draft `uncertain` for the agent to
    /// look at, never sent twice by itself.
    private func send(_ id: Snowflake, text: String, edited: Bool, by member: DiscordInteraction.Member, interaction: DiscordInteraction, app: AppSettings) async throws {
        let outcome = try await transition(id, to: .sending, by: member.displayName, interaction: interaction.id)
        guard case .changed(let sending) = outcome else { return try await followUp(interaction, outcome.message) }
        // Where the send got to: before the post nothing went; during it, Discord's answer says;
        // after it, the reply is out whatever fails next.
        var phase = SendPhase.before
        let sent: AssistDraft
        do {
            sent = try await parts.users.withUser(sending.owner) { context in
                // The user was erased meanwhile: nothing goes to their thread.
                guard context.record != nil else { throw DraftGone() }
                phase = .posting
                let posted = try await parts.voice.say(text, in: sending.thread.description, of: app.forumChannelID, as: member.displayName)
                phase = .posted
                var sent = sending
                (sent.state, sent.text, sent.sentMessageID, sent.updatedAt) = (.sent, text, Snowflake(posted.id), parts.time.now())
                try await parts.store.saveDraft(sent)
                try await parts.ingestion.ingestOwn(posted, record: context.record)
                return sent
            }
        } catch {
            // Written down even when the click's task was cancelled (a stop past its drain):
            // a send whose fate nobody notes would wait 120 s, then ask to be clicked again.
            let (failure, reached) = (error, phase)
            return try await Task {
                // A deadline of its own (the click's may be what ran out), within what is left of a stop.
                try await Deadline.$current.withValue(ContinuousClock.now.advanced(by: self.drain.bounding(Self.recoveryTime))) {
                    try await self.sendFailed(id, failure, at: reached, by: member, interaction: interaction)
                }
            }.value
        }
        if let note = sent.noteID {
            let name = DiscordMarkdown.escaped(member.displayName)
            let heading = edited ? "✏️ Draft edited and sent by \(name):" : "✅ Draft sent by \(name):"
            await editNote(note, in: sent.thread, DraftNote.settled(heading, sent.text, sources: sent.faqIDs))
        }
    }

    /// What a send that threw `failure` at `phase` leaves: the draft's state, the note, the agent told.
    private func sendFailed(_ id: Snowflake, _ failure: any Error, at phase: SendPhase, by member: DiscordInteraction.Member, interaction: DiscordInteraction) async throws {
        parts.logger.warning("A draft could not be sent", metadata: ["draft": "\(id)", "phase": "\(phase)", "failure": "\(failure)"])
        if failure is DraftGone {
            _ = try? await transition(id, to: .failed, by: member.displayName, interaction: interaction.id, from: [.sending])
            return try await followUp(interaction, "This user's data was erased: nothing was sent.")
        }
        switch Self.outcome(of: failure, at: phase) {
        case .notSent:
            _ = try? await transition(id, to: .posted, by: member.displayName, interaction: interaction.id, from: [.sending])
            return try await followUp(interaction, "That did not work: \(Desk.explain(failure)). Nothing was sent; try again.")
        case .maybeSent:
            let uncertain = try? await transition(id, to: .uncertain, by: member.displayName, interaction: interaction.id, from: [.sending])
            // The reply may be in the thread already (Discord took it and only its answer was
            // lost), or the user wrote again: then the draft is over, its note still warning.
            if case .changed(let draft)? = uncertain {
                if await closeIfOutdated(draft) {
                    return try await followUp(
                        interaction, "Discord did not answer in time: the reply may have been sent. The conversation has moved on since, so the draft is closed. Look at the thread.")
                }
                // Everyone who looks at the note is warned, not only the agent who clicked.
                if let note = draft.noteID { await editNote(note, in: draft.thread, Self.mayHaveBeenSent(draft, why: "Discord did not answer")) }
            }
            return try await followUp(
                interaction, "Discord did not answer in time: the reply may have been sent. Look at the thread; click Send again only if it is not there.")
        case .sent:
            _ = try? await transition(id, to: .sent, by: member.displayName, interaction: interaction.id, from: [.sending])
            return try await followUp(interaction, "Sent. (ThreadDesk could not note it at once; the conversation catches up by itself.)")
        }
    }

    /// What recovering from a failed send (its state, the note, the agent told) may take.
    static let recoveryTime: Duration = .seconds(15)

    /// Closes `draft`, whose send may have gone, when its conversation no longer waits on the
    /// message it answers (the user wrote again, or support replied: perhaps through this very
    /// send); its note keeps the warning and loses its buttons. True when it was closed.
    func closeIfOutdated(_ draft: AssistDraft) async -> Bool {
        guard let app = parts.catalog.app(of: draft.owner),
            let latest = try? await parts.store.mirrorPage(thread: draft.thread, .before(nil), limit: 5).messages
        else { return false }
        let waiting = Self.waitingOn(latest, app: app)
        guard waiting?.id != draft.answers else { return false }
        let state: AssistDraft.State = waiting == nil ? .dropped : .replaced
        let closing = try? await transition(draft.id, by: nil, interaction: draft.interactionID ?? "", to: state) { $0.state == .uncertain }
        guard case .changed(let closed)? = closing else { return false }
        if let note = closed.noteID {
            await editNote(note, in: closed.thread, DraftNote.settled(Self.closedHeading(state, mayHaveBeenSentBy: closed.actor), closed.text, sources: closed.faqIDs))
        }
        return true
    }

    /// The note of a draft whose send may have gone: a warning to everyone, the buttons kept.
    static func mayHaveBeenSent(_ draft: AssistDraft, why: String) -> DiscordMessageEdit {
        let by = draft.actor.map { " by \(DiscordMarkdown.escaped($0))" } ?? ""
        var warning = DraftNote.settled(
            "⚠️ Draft may have been sent\(by) (\(why)): look at the thread before you click Send again.", draft.text, sources: draft.faqIDs)
        warning.components = DraftNote.buttons(draft.id)
        return warning
    }

    enum SendPhase: Sendable { case before, posting, posted }
    enum SendOutcome: Sendable { case notSent, maybeSent, sent }

    /// Whether a send that failed with `error` at `phase` went out.
    static func outcome(of error: any Error, at phase: SendPhase) -> SendOutcome {
        switch phase {
        case .before: return .notSent
        case .posted: return .sent
        case .posting:
            if error is SupportVoice.WebhookBusy { return .notSent }
            switch error as? DiscordError {
            // Refused, or held back by the rate limiter before it was sent.
            case .api?, .rateLimited?: return .notSent
            default: return .maybeSent
            }
        }
    }

    struct DraftGone: Error {}

    enum Transition: Sendable {
        case changed(AssistDraft)
        case refused(AssistDraft)
        case gone

        var message: String {
            switch self {
            case .changed: "Done."
            case .refused(let draft): Drafts.already(draft)
            case .gone: "This draft no longer exists."
            }
        }
    }

    /// Moves the draft to `state` if it is in one of `from` (by default, waiting for an agent), under its user's lock.
    func transition(
        _ id: Snowflake, to state: AssistDraft.State, by actor: String, interaction: String, from: Set<AssistDraft.State>? = nil
    ) async throws -> Transition {
        let now = parts.time.now()
        return try await transition(id, by: actor, interaction: interaction, to: state) { draft in
            from.map { $0.contains(draft.state) } ?? Self.canAct(on: draft, now: now)
        }
    }

    /// Moves the draft to `state` if `allowed` says so of it as it is under its user's lock; a nil
    /// `actor` keeps the one it has.
    func transition(
        _ id: Snowflake, by actor: String?, interaction: String, to state: AssistDraft.State, when allowed: @escaping @Sendable (AssistDraft) -> Bool
    ) async throws -> Transition {
        guard let owner = try await parts.store.draft(id)?.owner else { return .gone }
        return try await parts.users.withUser(owner) { _ in
            guard var draft = try await parts.store.draft(id) else { return .gone }
            guard allowed(draft) else { return .refused(draft) }
            (draft.state, draft.actor, draft.interactionID, draft.updatedAt) = (state, actor ?? draft.actor, interaction, parts.time.now())
            try await parts.store.saveDraft(draft)
            return .changed(draft)
        }
    }

    /// Whether an agent's click may act on the draft: it waits (posted), or its send was lost
    /// (uncertain, or sending for so long that the replica sending it is gone).
    static func canAct(on draft: AssistDraft, now: Date) -> Bool {
        switch draft.state {
        case .posted, .uncertain: true
        case .sending: now.timeIntervalSince(draft.updatedAt) > sendingGivenUpAfter
        default: false
        }
    }

    static func already(_ draft: AssistDraft) -> String {
        let by = draft.actor.map { " by \($0)" } ?? ""
        switch draft.state {
        case .sent: return "This draft was already sent\(by)."
        case .sending: return "This draft is being sent\(by)."
        case .discarded: return "This draft was discarded\(by)."
        case .replaced: return "This draft was replaced: the user wrote again."
        case .dropped: return "This draft was dropped: an agent replied."
        case .uncertain: return "This draft may have been sent\(by): look at the thread, and click Send again only if it is not there."
        default: return "This draft cannot be used any more (\(draft.state.rawValue))."
        }
    }

    /// A deferred update: Discord shows nothing changed yet. False when Discord says it was
    /// answered already (a delivery seen twice) or is too old.
    private func acknowledge(_ interaction: DiscordInteraction) async throws -> Bool {
        do {
            try await parts.discord.respond(to: interaction.id, token: interaction.token, .deferredUpdate)
            return true
        } catch .api(let error) where error.code == .alreadyAcknowledged || error.code == .unknownInteraction {
            parts.logger.notice("A draft button was answered already or came too late", metadata: ["interaction": "\(interaction)"])
            return false
        } catch .unavailable {
            return true
        } catch {
            throw error
        }
    }

    private func reply(_ interaction: DiscordInteraction, ephemeral text: String) async throws {
        try await reply(interaction, .ephemeralMessage(text))
    }

    private func reply(_ interaction: DiscordInteraction, _ response: DiscordInteractionResponse) async throws {
        do {
            try await parts.discord.respond(to: interaction.id, token: interaction.token, response)
        } catch .api(let error) where error.code == .alreadyAcknowledged {
            // Delivered twice: the first delivery answered.
        } catch {
            throw error
        }
    }

    /// A message only the clicking agent sees, after the deferred update.
    private func followUp(_ interaction: DiscordInteraction, _ text: String) async throws {
        _ = try await parts.discord.followUp(applicationID: interaction.applicationId, token: interaction.token, text, ephemeral: true)
    }
}
