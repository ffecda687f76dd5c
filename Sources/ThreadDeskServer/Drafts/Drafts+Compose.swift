import ThreadDeskWire
import Logging
import AssistClient
import DiscordREST
import Deadlines
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// Writing a draft and posting its note; settling the drafts a newer message or a reply outdates.
extension Drafts {
    /// The user as the assistant's budgets see them: known once an agent answered them, as
    /// ThreadDesk noted it or as the conversation shows (replies from before it was noted).
    static func asker(_ record: UserRecord, _ conversation: [MirroredMessage], app: AppSettings) -> AssistAsker {
        let answered = record.live.agentAnsweredAt != nil
            || conversation.contains { $0.author == .support && $0.isSupportReply && !ReplyWatch.isAutomatic($0, app: app) }
        return AssistAsker(network: record.live.assistNetwork, known: answered)
    }

    /// Drafts an answer to the thread's newest user message and posts it as a note, unless the
    /// thread no longer waits on that message by the time the answer comes.
    func compose(_ thread: Snowflake, owner: UserID, answering newest: Snowflake, app: AppSettings) async throws {
        guard let record = try await parts.store.user(owner) else { return }
        let page = try await parts.store.mirrorPage(thread: thread, .before(nil), limit: DraftPrompt.maxMessages)
        guard let waiting = Self.waitingOn(page.messages, app: app), waiting.id >= newest else { return }
        if try await parts.store.openDrafts(thread: thread).contains(where: { $0.answers == waiting.id }) { return }
        let question = Self.question(in: page.messages, app: app)
        let matches = await parts.faq.book(for: app.id)?.suggestions(for: question, limit: Self.matches) ?? []
        let settings = parts.assist.deployment
        let prompt = DraftPrompt(
            .draft, app: app.name, conversation: page.messages, matches: matches, installation: record.installation,
            profile: try? await parts.store.profile(of: owner),
            maxCharacters: settings.maxDraftCharacters, canary: OutputGuard.newCanary())
        let check = OutputGuard(canary: prompt.canary, systemPrompt: prompt.system, maxCharacters: settings.maxDraftCharacters)
        let text: String
        do {
            text = try await parts.assist.complete(
                AssistRequest(messages: prompt.messages, maxTokens: settings.maxTokens, temperature: 0.3), purpose: .draft, app: app, user: owner,
                asker: Self.asker(record, page.messages, app: app), guard: check)
        } catch {
            // No draft: the agent answers as ever. The refusal is counted and logged by the service.
            return
        }
        // Kept first, as drafting, under the lock: a click always finds its draft, and the thread
        // gets one draft per message however many turns look at it.
        let now = parts.time.now()
        let sources = matches.map(\.id)
        var draft = AssistDraft(
            id: parts.ids.next(at: now), owner: owner, thread: thread, answers: waiting.id, state: .drafting,
            text: DraftNote.fitted(text, sources: sources), faqIDs: sources, createdAt: now)
        let kept: Bool = try await parts.users.withUser(owner) { _ in
            // Someone spoke while the model wrote: this draft answers nothing any more.
            let latest = try await parts.store.mirrorPage(thread: thread, .before(nil), limit: 5).messages
            guard Self.waitingOn(latest, app: app)?.id == waiting.id else { return false }
            guard try await !parts.store.openDrafts(thread: thread).contains(where: { $0.answers == waiting.id }) else { return false }
            try await parts.store.saveDraft(draft)
            return true
        }
        guard kept else { return }
        // The note is posted outside the lock: Discord's pace never holds up the user's own messages.
        var note = DraftNote.waiting(draft.text, draft: draft.id, sources: sources)
        note.nonce = ThreadNotes.nonce("draft", id: owner, draft.id.description)
        let posted: DiscordMessage
        do {
            posted = try await parts.discord.createMessage(in: thread.description, note)
        } catch {
            draft.state = .failed
            draft.updatedAt = parts.time.now()
            _ = try? await parts.users.withUser(owner) { _ in try await parts.store.saveDraft(draft) }
            throw error
        }
        let shown: Bool
        do {
            shown = try await parts.users.withUser(owner) { context in
                // Replaced or dropped while its note was on the way: the note says so at once.
                guard var current = try await parts.store.draft(draft.id), current.state == .drafting else { return false }
                (current.state, current.noteID, current.updatedAt) = (.posted, Snowflake(posted.id), parts.time.now())
                try await parts.store.saveDraft(current)
                try await parts.ingestion.ingestOwn(posted, record: context.record)
                return true
            }
        } catch {
            // The note is up but the draft could not be marked as shown: it is closed, if the
            // store lets it, and the note loses buttons that would answer nothing, unless an
            // agent's click took the draft meanwhile. A deadline of its own: the turn's may be
            // what ran out.
            let id = draft.id
            await Task {
                await Deadline.$current.withValue(ContinuousClock.now.advanced(by: self.drain.bounding(Self.recoveryTime))) {
                    let closing = try? await self.transition(id, by: nil, interaction: "", to: .failed) { [.drafting, .posted].contains($0.state) }
                    if case .refused? = closing { return }
                    if let note = Snowflake(posted.id) {
                        await self.editNote(note, in: thread, DraftNote.settled("🤖 Draft withdrawn: ThreadDesk could not keep it.", draft.text, sources: sources))
                    }
                }
            }.value
            throw error
        }
        if shown {
            parts.logger.info("Posted a draft answer", metadata: ["thread": "\(thread)", "draft": "\(draft.id)", "sources": "\(sources.count)"])
        } else if let id = Snowflake(posted.id) {
            await editNote(id, in: thread, DraftNote.settled("🤖 Draft outdated: the conversation moved on.", draft.text, sources: sources))
        }
    }

    /// The user message the conversation waits on: the newest shown message, when it is the
    /// user's (ThreadDesk's away message does not count as an answer); nil when support spoke last.
    static func waitingOn(_ messages: [MirroredMessage], app: AppSettings) -> MirroredMessage? {
        guard let last = messages.last(where: { !ReplyWatch.isAutomatic($0, app: app) }), last.author == .user else { return nil }
        return last
    }

    /// The thread's drafts still waiting for an agent that answer a message older than `id`
    /// become `state` (replaced by a newer message, dropped by a reply), their buttons gone. One
    /// whose send may have gone (uncertain) closes too, its note still saying so.
    func settle(_ thread: Snowflake, owner: UserID, answeredBefore id: Snowflake, as state: AssistDraft.State) async throws {
        let settling: Set<AssistDraft.State> = [.drafting, .posted, .uncertain]
        let outdated = try await parts.store.openDrafts(thread: thread).filter { $0.answers < id && settling.contains($0.state) }
        for draft in outdated {
            let changed: (was: AssistDraft.State, now: AssistDraft)? = try await parts.users.withUser(owner) { _ in
                guard var current = try await parts.store.draft(draft.id), settling.contains(current.state) else { return nil }
                let was = current.state
                current.state = state
                current.updatedAt = parts.time.now()
                try await parts.store.saveDraft(current)
                return (was, current)
            }
            guard let changed, let note = changed.now.noteID else { continue }
            let heading =
                changed.was == .uncertain
                ? Self.closedHeading(state, mayHaveBeenSentBy: changed.now.actor)
                : state == .replaced ? "🤖 Draft replaced: the user wrote again." : "🤖 Draft dropped: an agent replied."
            await editNote(note, in: thread, DraftNote.settled(heading, changed.now.text, sources: changed.now.faqIDs))
        }
    }

    /// The heading of a note whose draft may have been sent, closed as `state` (replaced or dropped).
    static func closedHeading(_ state: AssistDraft.State, mayHaveBeenSentBy actor: String?) -> String {
        let by = actor.map { " by \(DiscordMarkdown.escaped($0))" } ?? ""
        let why = state == .replaced ? "the user wrote again" : "an agent replied"
        return "⚠️ Draft may have been sent\(by) (look at the thread); closed: \(why)."
    }

    /// Edits a draft's note; a note Discord no longer has (deleted by an agent) is left alone.
    func editNote(_ note: Snowflake, in thread: Snowflake, _ edit: DiscordMessageEdit) async {
        do {
            _ = try await parts.discord.editMessage(note.description, in: thread.description, edit)
        } catch {
            parts.logger.notice("Could not edit a draft's note", metadata: ["note": "\(note)", "error": "\(error)"])
        }
    }
}
