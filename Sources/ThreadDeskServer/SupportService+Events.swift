import Deadlines
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

extension SupportService: ForumEventSink {
    /// What the gateway saw, in order, into the mirror. Anything heard keeps the feed live; an
    /// event that cannot be ingested is a gap for the reconciliation to close.
    public func deliver(_ events: [ForumEvent]) async {
        await WaitTracker.$current.withValue(waits ?? WaitTracker.current) {
            await WaitTracker.run(job: "gateway events") { await handle(events) }
        }
    }

    private func handle(_ events: [ForumEvent]) async {
        var gap = false
        do {
            if try await feed.heard() { gap = true }
        } catch {
            logger.warning("Could not record that the gateway spoke", metadata: ["error": "\(error)"])
        }
        for event in events {
            do {
                try await Deadline.within(configuration.requestTimeout) { try await handle(event) }
            } catch {
                logger.warning("Could not ingest a gateway event; reconciling", metadata: ["error": "\(error)"])
                gap = true
            }
            if case .gap = event { gap = true }
        }
        if gap {
            do {
                try await feed.gap()
            } catch {
                logger.warning("Could not record a gateway gap", metadata: ["error": "\(error)"])
            }
            reconciliations.request("gateway gap")
        }
    }

    private func handle(_ event: ForumEvent) async throws {
        switch event {
        case .messageCreated(let message), .messageUpdated(let message):
            let bot = try await self.bot.id()
            guard let thread = Snowflake(message.channelId) else { return }
            try await ingest(MirrorIngestion.facts([message], bot: bot), into: thread)
        case .messageChanged(let channel, let id):
            // An update without the whole message: ask for it.
            guard let thread = Snowflake(channel), let messageID = Snowflake(id) else { return }
            let bot = try await self.bot.id()
            if let message = try await existingMessage(id, in: channel) {
                try await ingest(MirrorIngestion.facts([message], bot: bot), into: thread)
            } else {
                try await ingest([.deleted(messageID, thread: thread)], into: thread)
            }
        case .messageDeleted(let channel, let id):
            guard let thread = Snowflake(channel), let messageID = Snowflake(id) else { return }
            try await ingest([.deleted(messageID, thread: thread)], into: thread)
        case .messagesDeleted(let channel, let ids):
            guard let thread = Snowflake(channel) else { return }
            try await ingest(ids.compactMap { Snowflake($0) }.map { .deleted($0, thread: thread) }, into: thread)
        case .threadDeleted(let threadID):
            guard let thread = Snowflake(threadID), let owner = try await owner(of: thread) else { return }
            try await withUser(owner) { context in try await sync.markGone(thread, context: &context) }
        case .threadUpdated, .alive, .gap:
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

    /// The thread's owner: whoever has it now, or had it when it was mirrored.
    func owner(of thread: Snowflake) async throws -> UserID? {
        if let owner = try await store.userID(forThread: thread.description) { return owner }
        return try await store.mirrorThread(thread)?.owner
    }

    /// Facts about a thread ThreadDesk knows; other threads of the forum are not ours to mirror.
    private func ingest(_ facts: [MirrorFact], into thread: Snowflake) async throws {
        guard let owner = try await owner(of: thread) else { return }
        try await withUser(owner) { context in
            guard let record = context.record else { return }
            try await ingestion.apply(facts, thread: thread, record: record)
        }
    }
}
