import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Brings a thread's mirror up to date through REST when the gateway feed cannot vouch for it:
/// a thread never mirrored is backfilled once; one the feed may have missed facts of is refreshed
/// (its newest page, plus anything newer than the mirror). Everything goes through the ingestion.
struct MirrorSync: Sendable {
    let store: any UserRecords & MirrorStore
    let discord: DiscordClient<AnyClock>
    let bot: BotIdentity
    let feed: FeedState
    let ingestion: MirrorIngestion
    let logger: Logger

    static let pageSize = 100

    /// Makes `thread` current enough to answer a read from the mirror: no Discord call when the
    /// feed vouches for it; else one (a backfill of a thread never mirrored takes one per 100
    /// messages). False when the thread turns out to be deleted.
    /// - Parameters:
    ///   - thread: The thread to read.
    ///   - owner: Its user, whose lock a catch-up takes.
    /// - Throws: `DiscordError` when a catch-up is needed and Discord fails, and the store's errors.
    func ensureCurrent(_ thread: Snowflake, owner: UserID) async throws -> Bool {
        let feed = try await self.feed.snapshot()
        if let state = try await store.mirrorThread(thread) {
            if state.gone { return false }
            if feed.trusts(state) { return true }
        }
        try await store.withUser(owner) { context in
            guard let record = context.record, record.threadID == thread.description else { return }
            let state = try await store.mirrorThread(thread)
            if let state, state.gone || feed.trusts(state) { return }
            try await synchronize(thread, state: state, epoch: feed.epoch, record: record, context: &context)
        }
        return try await store.mirrorThread(thread)?.gone != true
    }

    /// Refreshes (or backfills) `thread` whatever the feed says: reconciliation's step.
    /// - Parameters:
    ///   - thread: The thread to read.
    ///   - owner: Its user, whose lock the refresh takes.
    /// - Throws: `DiscordError` when Discord fails (a thread gone is marked so, no error), and the
    ///   store's errors.
    func reconcile(_ thread: Snowflake, owner: UserID) async throws {
        let epoch = try await feed.snapshot().epoch
        try await store.withUser(owner) { context in
            guard let record = context.record else { return }
            let state = try await store.mirrorThread(thread)
            if state?.gone == true { return }
            try await synchronize(thread, state: state, epoch: epoch, record: record, context: &context)
        }
    }

    private func synchronize(
        _ thread: Snowflake, state: MirrorThread?, epoch: Int, record: UserRecord, context: inout UserContext
    ) async throws {
        let bot = try await self.bot.id()
        do {
            let complete = try await fetch(thread, since: state?.complete == true ? state?.newestSeen : nil, bot: bot, record: record)
            var updated = try await store.mirrorThread(thread) ?? MirrorThread(id: thread, owner: record.id, complete: false)
            updated.complete = updated.complete || complete
            updated.syncedEpoch = max(updated.syncedEpoch, epoch)
            updated.syncedAt = ingestion.now()
            try await store.saveMirrorThread(updated)
        } catch let error as DiscordError {
            guard case .api(let failure) = error, failure.threadIsGone else { throw error }
            try await markGone(thread, context: &context)
        }
    }

    /// Pages `thread` newest first until it reaches `since` (a refresh) or the thread's start
    /// (a backfill, when `since` is nil), ingesting every page; messages the mirror holds in the
    /// range read that Discord no longer lists are deleted. Returns whether the whole thread was read.
    private func fetch(_ thread: Snowflake, since: Snowflake?, bot: Snowflake, record: UserRecord) async throws -> Bool {
        var before: Snowflake?
        var seen: Set<Snowflake> = []
        var reachedStart = false
        while true {
            let page = try await discord.messages(in: thread.description, before: before?.description, limit: Self.pageSize)
            let facts = ingestion.facts(page, bot: bot, owner: record.id)
            try await ingestion.apply(facts, thread: thread, record: record)
            seen.formUnion(facts.map(\.messageID))
            let oldest = page.compactMap { Snowflake($0.id) }.min()
            if page.count < Self.pageSize { reachedStart = true }
            guard !reachedStart, let oldest else { break }
            if let since, oldest <= since { break }
            before = oldest
        }
        // Only the range read is known: from its oldest message on (or everything, at the start).
        let lowest = reachedStart ? Snowflake(0) : (seen.min() ?? Snowflake(UInt64.max))
        let missing = try await missing(from: try await store.mirroredIDs(thread: thread, from: lowest), seen: seen)
        try await ingestion.apply(missing.map { .deleted($0, thread: thread) }, thread: thread, record: record)
        return reachedStart
    }

    /// Of the mirror's messages `held`, those Discord no longer lists among `seen`: a message the
    /// outbox keeps is not in Discord yet, and one it delivered is listed under Discord's id.
    private func missing(from held: [Snowflake], seen: Set<Snowflake>) async throws -> [Snowflake] {
        let unseen = held.filter { !seen.contains($0) }
        guard !unseen.isEmpty else { return [] }
        let delivered = Set(try await store.mirroredMessages(unseen).filter { $0.delivery == .sent }.map(\.id))
        let discordIDs = try await store.discordIDs(of: Array(delivered))
        return unseen.filter { id in delivered.contains(id) && !(discordIDs[id].map(seen.contains) ?? false) }
    }

    /// Deleted in Discord: reads answer from what is left and never ask Discord about it again;
    /// the user's next message starts a new thread.
    /// - Parameters:
    ///   - thread: The thread Discord deleted.
    ///   - context: Its user's record, held by the caller.
    /// - Throws: The store's errors.
    func markGone(_ thread: Snowflake, context: inout UserContext) async throws {
        // A user erased meanwhile (their thread deleted with them): nothing of theirs is written again.
        guard context.record != nil else { return }
        var state = try await store.mirrorThread(thread) ?? MirrorThread(id: thread, owner: context.id, complete: false)
        state.gone = true
        try await store.saveMirrorThread(state)
        if context.record?.threadID == thread.description {
            context.record?.threadID = nil
            context.record?.updatedAt = ingestion.now()
        }
        logger.notice("A thread was deleted in Discord", metadata: ["user": "\(context.id.logValue)", "thread": "\(thread)"])
    }
}
