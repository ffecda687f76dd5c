import Prometheus
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// Closing conversations, by an agent (`/close`, now or later) or by the timers (a scheduled
/// close due, `AUTO_CLOSE_DAYS`): the store's conversation closed under the user's lock, and,
/// when an agent had answered it, the user asked for a rating once (the request waits in the
/// user's record, its live event is numbered like any other, a push goes out).
struct ConversationClosing: ConversationClosings {
    let users: UserSerializer
    let store: any UserStore
    let discord: DiscordClient<AnyClock>
    let voice: SupportVoice
    let ingestion: MirrorIngestion
    let status: StatusTags?
    let hub: LiveHub?
    let pushes: PushDispatcher?
    let catalog: AppCatalog
    let settings: LifecycleSettings
    let signals: LifecycleSignals
    /// The conversation's events for the app's webhooks; nil: none.
    let webhooks: WebhookEvents?
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime

    /// The rating push's text.
    static let ratingPushText = "How did we do? Rate your conversation with support."

    func agentClosed(_ owner: UserID, thread: Snowflake) async throws {
        _ = try await close(owner, by: .agent)
    }

    func agentReopened(_ owner: UserID, thread: Snowflake) async throws {
        let date = time.now()
        try await users.withUser(owner) { context in
            guard let reopened = try await store.reopenConversation(owner, at: date) else { return }
            if context.record?.live.ratingRequest?.conversationID == reopened.id { context.record?.live.ratingRequest = nil }
            webhooks?.record(.conversationReopened, app: owner.app, owner: owner, data: ConversationEvent(reopened), at: date, in: &context)
        }
        metrics.lifecycle.reopened.increment()
        signals.wake()
    }

    func scheduleClose(_ owner: UserID, thread: Snowflake, after delay: String, by agent: String) async throws -> String {
        guard let delay = CloseDelay.parse(delay) else {
            return "“\(DiscordMarkdown.escaped(String(delay.prefix(16))))” is no delay ThreadDesk reads: write 30m, 2h, 3d or 1h30m "
                + "(from a minute to 30 days). Nothing was scheduled."
        }
        let due = time.now().addingTimeInterval(delay / .seconds(1))
        let scheduled = try await users.withUser(owner) { _ in try await store.scheduleConversationClose(owner, at: due) }
        guard scheduled != nil else { return "This conversation is closed already: nothing was scheduled." }
        let stamp = Int(due.timeIntervalSince1970)
        let note = "\(NoteMarkers.prefixes[0]) 🕑 \(DiscordMarkdown.escaped(agent)) scheduled a close <t:\(stamp):R> (<t:\(stamp):f>). "
            + "The user's next message cancels it."
        try await postNote(note, in: thread, owner: owner, purpose: "close-scheduled", String(stamp))
        metrics.lifecycle.scheduled.increment()
        signals.wake()
        return "The conversation closes <t:\(stamp):R> unless the user writes first; a note in the thread says so."
    }

    /// Closes `owner`'s open conversation (with `dueBy`: only a scheduled close due by then) and
    /// asks for the rating. Nil when nothing was closed.
    @discardableResult
    func close(_ owner: UserID, by closer: ConversationCloser, dueBy: Date? = nil) async throws -> ConversationRecord? {
        let date = time.now()
        let closed = try await users.withUser(owner) { context in try await closeHeld(owner, by: closer, dueBy: dueBy, at: date, context: &context) }
        if let closed { await announce(closed, by: closer) }
        return closed
    }

    /// The close itself, the caller holding the user: the rating request waits in their record.
    private func closeHeld(
        _ owner: UserID, by closer: ConversationCloser, dueBy: Date?, at date: Date, context: inout UserContext
    ) async throws -> ConversationRecord? {
        guard let closed = try await store.closeConversation(owner, at: date, by: closer, dueBy: dueBy) else { return nil }
        if settings.ratings, let requested = closed.ratingRequestedAt, context.record != nil {
            let number = try await store.nextEventSequences(1).first ?? 0
            context.record?.live.ratingRequest = PendingRating(conversationID: closed.id, requestedAt: requested, seq: number)
        }
        // A closed conversation is over: the next one may get an answer while away again.
        if closer != .agent { context.record?.live.assistAnsweredAt = nil }
        webhooks?.record(.conversationClosed, app: owner.app, owner: owner, data: ConversationEvent(closed), at: date, in: &context)
        return closed
    }

    /// After the lock: the numbers, and the rating request on the user's streams and device.
    private func announce(_ closed: ConversationRecord, by closer: ConversationCloser) async {
        metrics.lifecycle.closed(by: closer, app: closed.owner.app)
        guard settings.ratings, closed.ratingRequestedAt != nil else { return }
        metrics.lifecycle.ratingsRequested.increment()
        hub?.changed(closed.owner)
        await pushes?.sendRatingRequest(to: closed.owner, conversation: closed.id, text: Self.ratingPushText)
    }

    /// A close the timers make (`scheduled`, `auto`), all under the user's lock, so that two
    /// replicas never both make it: an auto-close checks that support still answered last before
    /// `idleBefore`; the conversation closes, then the closing message is said when one is set;
    /// then the thread is resolved and archived. False when there was nothing (left) to close.
    func closeByTimer(_ conversation: ConversationRecord, by closer: ConversationCloser, dueBy: Date?, idleBefore: Date?) async throws -> Bool {
        let owner = conversation.owner
        let date = time.now()
        let closed = try await users.withUser(owner) { context -> ConversationRecord? in
            if let idleBefore {
                let current = try await store.latestConversation(of: owner)
                guard let current, current.id == conversation.id, current.isOpen, current.waitingSince == nil,
                    let answered = current.lastSupportAt, answered < idleBefore
                else { return nil }
            }
            guard let closed = try await closeHeld(owner, by: closer, dueBy: dueBy, at: date, context: &context) else { return nil }
            // Closed first, said after: a message that cannot be posted is not posted again by the
            // next round (the webhook's post has no nonce).
            if closer == .auto, let message = settings.autoCloseMessage, let app = catalog.app(of: owner), let thread = context.record?.threadID {
                do {
                    // Silent: the user is told in the conversation, and asked for a rating by a push.
                    let posted = try await voice.say(NoteMarkers.silentPrefixes[1] + " " + message, in: thread, of: app.forumChannelID, as: nil)
                    try await ingestion.ingestOwn(posted, record: context.record)
                } catch {
                    logger.warning("Could not post the closing message", metadata: ["user": "\(owner.logValue)", "error": "\(error)"])
                }
            }
            return closed
        }
        guard let closed else { return false }
        await announce(closed, by: closer)
        if let thread = try await store.user(owner)?.threadID.flatMap({ Snowflake($0) }) {
            if let status { status.close(thread) } else { _ = try? await discord.modifyThread(thread.description, archived: true) }
            if closer == .scheduled {
                try? await postNote(
                    "\(NoteMarkers.prefixes[0]) 🕑 Closed as scheduled: the user did not write since.", in: thread, owner: owner,
                    purpose: "close-done", String(conversation.id))
            }
        }
        return true
    }

    /// A note of ThreadDesk's in the thread (the bot's, hidden from the user), posted once per
    /// `purpose` and `parts` however often it is tried.
    func postNote(_ text: String, in thread: Snowflake, owner: UserID, purpose: String, _ parts: String...) async throws {
        let nonce = ThreadNotes.nonce(purpose, id: owner, parts.joined(separator: "/"))
        _ = try await discord.createMessage(in: thread.description, DiscordMessageCreate(content: text, nonce: nonce))
    }
}
