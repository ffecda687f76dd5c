import Deadlines
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing

/// What the gateway saw, whether heard in process or posted by the gateway daemon: each event's
/// facts into the mirror behind its thread owner's earlier ones, agents' typing to the user's
/// streams, and every gap to the reconciliation.
struct GatewayEventHandler: ForumEventSink {
    /// The features that take the events that are no thread's facts: typing, interactions, the
    /// FAQ forum's posts, the threads' status.
    struct Recipients: Sendable {
        let live: LiveService
        /// Answers the slash commands; nil when they are off.
        let desk: Desk?
        /// Answers the drafts' buttons; nil when the assistant is off.
        let drafts: Drafts?
        /// Every app's FAQ forum.
        let faq: FAQForums
        /// Keeps the threads' status tags; nil when they are off.
        let status: StatusTags?
    }

    let users: UserSerializer
    let discord: DiscordClient<AnyClock>
    let bot: BotIdentity
    let feed: FeedState
    let sync: MirrorSync
    let ingestion: MirrorIngestion
    let queue: IngestionQueue
    let reconciliations: CatchUpGate
    let recipients: Recipients
    /// How long one event's ingestion may take.
    let timeout: Duration
    let waits: WaitTracker?
    /// A batch of events is a span (a child of the daemon's, when it posted them); each event's
    /// ingestion, queued behind its owner's, goes on in that trace.
    let traces: Traces
    let logger: Logger

    init(
        users: UserSerializer, discord: DiscordClient<AnyClock>, bot: BotIdentity, feed: FeedState, sync: MirrorSync, ingestion: MirrorIngestion,
        queue: IngestionQueue, reconciliations: CatchUpGate, live: LiveService, desk: Desk?, drafts: Drafts?, faq: FAQForums, status: StatusTags?,
        timeout: Duration, waits: WaitTracker?, traces: Traces, logger: Logger
    ) {
        (self.users, self.discord, self.bot, self.feed, self.sync, self.ingestion) = (users, discord, bot, feed, sync, ingestion)
        (self.queue, self.reconciliations) = (queue, reconciliations)
        recipients = Recipients(live: live, desk: desk, drafts: drafts, faq: faq, status: status)
        (self.timeout, self.waits, self.traces, self.logger) = (timeout, waits, traces, logger)
    }

    /// What the gateway saw, in order, into the mirror. Anything heard keeps the feed live; an
    /// event that cannot be ingested is a gap for the reconciliation to close.
    /// - Parameter events: The gateway's events, in the order it heard them.
    func deliver(_ events: [ForumEvent]) async {
        await WaitTracker.$current.withValue(waits ?? WaitTracker.current) {
            await WaitTracker.run(job: "gateway events") {
                // The gateway's heartbeats alone (`alive`) are no trace: they would be most of them.
                guard traces.isOn, events.contains(where: { if case .alive = $0 { false } else { true } }) else { return await handle(events) }
                await traces.span("gateway.events", kind: .consumer, attributes: ["threaddesk.events": .int64(Int64(events.count))]) { _ in
                    await handle(events)
                }
            }
        }
    }

    /// Records that the gateway spoke, then queues each event's facts behind its thread owner's
    /// earlier ones and returns: one user's backlog never holds up another's events.
    private func handle(_ events: [ForumEvent]) async {
        var gap = false
        do {
            if try await feed.heard() { gap = true }
        } catch {
            logger.warning("Could not record that the gateway spoke", metadata: ["error": "\(error)"])
        }
        for event in events {
            if case .gap = event {
                gap = true
                recipients.faq.reload()
            }
            if case .typing(let channel, let user) = event {
                await recipients.live.relayTyping(channelID: channel, userID: user)
                continue
            }
            if case .interaction(let interaction) = event {
                // A draft's button or its edit modal goes to the drafts, in a queue of their own:
                // clicks and commands never wait for each other.
                // (With drafts off, the desk tells whoever clicks an old draft's button.)
                if Drafts.isDraftInteraction(interaction), let drafts = recipients.drafts { drafts.receive(interaction) } else { recipients.desk?.receive(interaction) }
                continue
            }
            if Self.isFAQ(event) {
                _ = await recipients.faq.apply(event)
                continue
            }
            if case .threadUpdated = event, recipients.status == nil { continue }
            guard let thread = Self.thread(of: event) else { continue }
            do {
                guard let owner = try await ingestion.owner(of: thread) else { continue }
                let accepted = queue.enqueue(owner, traces.carrying {
                    do {
                        let attributes: SpanAttributes = self.traces.isOn ? ["threaddesk.event": .string(event.traceName)] : [:]
                        try await self.traces.span("mirror.ingest", attributes: attributes) { _ in
                            try await Deadline.within(self.timeout) { try await self.handle(event, thread: thread, owner: owner) }
                        }
                    } catch {
                        self.logger.warning("Could not ingest a gateway event; reconciling", metadata: ["error": "\(error)"])
                        await self.recordGap()
                    }
                })
                if !accepted {
                    logger.warning("The ingestion queue is full; reconciling instead")
                    gap = true
                }
            } catch {
                logger.warning("Could not find a thread's owner; reconciling", metadata: ["error": "\(error)"])
                gap = true
            }
        }
        if gap { await recordGap() }
    }

    /// Facts may be lost: every thread must be confirmed again, and a reconciliation does that.
    func recordGap() async {
        do {
            try await feed.gap()
        } catch {
            logger.warning("Could not record a gateway gap", metadata: ["error": "\(error)"])
        }
        reconciliations.request("gateway gap")
    }

    static func thread(of event: ForumEvent) -> Snowflake? {
        switch event {
        case .messageCreated(let message), .messageUpdated(let message): Snowflake(message.channelId)
        case .messageChanged(let channel, _), .messageDeleted(let channel, _), .messagesDeleted(let channel, _): Snowflake(channel)
        case .threadDeleted(let thread), .threadUpdated(let thread, _, _, _): Snowflake(thread)
        case .alive, .gap, .typing, .interaction, .faqPost, .faqStarter, .faqStarterChanged, .faqPostDeleted, .faqAccessChanged: nil
        }
    }

    static func isFAQ(_ event: ForumEvent) -> Bool {
        switch event {
        case .faqPost, .faqStarter, .faqStarterChanged, .faqPostDeleted, .faqAccessChanged: true
        default: false
        }
    }

    private func handle(_ event: ForumEvent, thread: Snowflake, owner: UserID) async throws {
        switch event {
        case .messageCreated(let message), .messageUpdated(let message):
            let bot = try await self.bot.id()
            try await ingest(ingestion.facts([message], bot: bot, owner: owner), into: thread, owner: owner)
        case .messageChanged(let channel, let id):
            // An update without the whole message: ask for it.
            guard let messageID = Snowflake(id) else { return }
            let bot = try await self.bot.id()
            if let message = try await existingMessage(id, in: channel) {
                try await ingest(ingestion.facts([message], bot: bot, owner: owner), into: thread, owner: owner)
            } else {
                try await ingest([.deleted(messageID, thread: thread)], into: thread, owner: owner)
            }
        case .messageDeleted(_, let id):
            guard let messageID = Snowflake(id) else { return }
            try await ingest([.deleted(messageID, thread: thread)], into: thread, owner: owner)
        case .messagesDeleted(_, let ids):
            try await ingest(ids.compactMap { Snowflake($0) }.map { .deleted($0, thread: thread) }, into: thread, owner: owner)
        case .threadDeleted:
            try await users.withUser(owner) { context in try await sync.markGone(thread, context: &context) }
        case .threadUpdated(_, let archived, _, let tags):
            // In the owner's order (not under their lock: a send holding it must not keep the
            // note from hearing an agent's change). A failure here is a gap: no note is trusted.
            guard let status = recipients.status else { return }
            try await status.heard(thread, archived: archived, appliedTags: tags)
            // An erasure that went through meanwhile took the note: one written after it goes too.
            if try await ingestion.owner(of: thread) == nil { try await status.dropNote(thread) }
        case .alive, .gap, .typing, .interaction, .faqPost, .faqStarter, .faqStarterChanged, .faqPostDeleted, .faqAccessChanged:
            break
        }
    }

    /// The message as Discord has it now; nil when Discord says it is gone.
    private func existingMessage(_ id: String, in channel: String) async throws(DiscordError) -> DiscordMessage? {
        do {
            return try await discord.message(id, in: channel)
        } catch {
            if case .api(let failure) = error, failure.status == 404 { return nil }
            throw error
        }
    }

    /// Facts about a thread of `owner`'s, under their lock.
    private func ingest(_ facts: [MirrorFact], into thread: Snowflake, owner: UserID) async throws {
        try await users.withUser(owner) { context in
            guard let record = context.record else { return }
            try await ingestion.apply(facts, thread: thread, record: record)
        }
    }
}

extension ForumEvent {
    /// The event's kind, for its span (never its content).
    var traceName: String {
        // The case's name, from the enum's reflection (its payload is never read).
        Mirror(reflecting: self).children.first?.label ?? String(describing: self)
    }
}
