import Foundation
import Deadlines
import DiscordGateway
import DiscordREST
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Keeps `FAQBook` in step with the FAQ forum: every post read through REST at start (the guild's
/// active threads in the forum and the forum's archived ones: archived posts stay answers), then
/// the gateway's post and starter events as they come. After a gateway gap (every new session
/// too) the forum is read again, since events may have been missed; a failed read is tried again,
/// backing off. A post whose starter's author may not use the desk is no answer (`FAQAuthors`):
/// it stays none, edits and all, until an agent posts it again.
///
/// What the book holds is kept in the store (a snapshot after each read and each change, written by
/// one loop, the latest only), so a server that starts suggests at once from it while it reads the
/// forum again. A read while the book holds answers goes at `heldReadInterval` a starter, leaving
/// Discord's global budget to the users' sends; posts gone from the forum's lists leave the book as
/// soon as the lists are read. A starter fetched since the last gap is current (the gateway's events
/// have kept it so): a read keeps it and fetches the others, so a gap during a read (the gateway's
/// first session, most often) costs a second fetch only of what was fetched before it, and a read
/// that failed part-way is not fetched twice.
struct FAQMirror: Service, CustomStringConvertible {
    let book: FAQBook
    let authors: FAQAuthors
    let discord: DiscordClient<AnyClock>
    let guildID: String
    let forumID: String
    let logger: Logger
    let time: ServerTime
    /// Other replicas (PostgreSQL's LISTEN/NOTIFY): the gateway's events reach one replica; it
    /// tells the others which post changed, and each reads that post again.
    var bus: (any LiveBus)? = nil
    let origin = UUID().uuidString
    let reloads = WakeSignal()
    /// Where the book's snapshot is kept; nil keeps none.
    var store: (any GlobalValues)? = nil
    var work: BackgroundWork = .untracked
    /// The app whose FAQ forum it is: its users alone are suggested its answers.
    var app: AppID = .default
    let progress = ReadProgress()
    /// Wakes the loop that writes the book's snapshot.
    let snapshotWanted = WakeSignal()
    let snapshotRequests = SnapshotRequests()
    /// The store's key of the book's snapshot: the key from before there were several apps for
    /// the default app's, the app's own for another's.
    var snapshotKey: String { app == .default ? "faq-snapshot" : "faq-snapshot/\(app)" }
    /// The names of its work for `BackgroundWork` (each app's forum its own).
    var workName: String { app == .default ? "FAQ forum" : "FAQ forum \(app)" }
    var snapshotWorkName: String { app == .default ? "FAQ snapshot" : "FAQ snapshot \(app)" }
    /// Between two starters read while the book already holds answers: 10 a second at most, a
    /// fifth of Discord's global 50 (1,000 posts in 100 s), the rest left to the users.
    static let heldReadInterval = Duration.milliseconds(100)
    /// Answers a first read hands to an empty book at a time (each batch rebuilds the index once).
    static let coldBatch = 100
    /// Archived pages read at most (100 posts each).
    static let maxArchivedPages = 100

    var description: String { "FAQMirror(forum \(forumID))" }

    func run() async throws {
        await restore()
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let bus {
                    // Posts other replicas heard change, read again one at a time in the order word came.
                    let (changed, posts) = AsyncStream.makeStream(of: String.self)
                    group.addTask {
                        for await post in changed {
                            await self.refresh(post)
                            work.end(workName)
                        }
                    }
                    group.addTask {
                        defer { posts.finish() }
                        let connections = Atomic(0)
                        await bus.listen(
                            receive: { payload in
                                // Word of another forum's change (another app's FAQ) is not this book's.
                                guard let change = FAQChange(payload), change.origin != origin, change.forum == nil || change.forum == forumID else { return }
                                // At once, in the order word comes: a post changed after it is judged anew.
                                if change.access == true { authors.forget() }
                                if let post = change.post {
                                    work.begin(workName)
                                    posts.yield(post)
                                }
                            },
                            connected: {
                                // A reconnection may have missed announcements: read the forum again.
                                if connections.add(1, ordering: .relaxed).oldValue > 0 { self.reload() }
                            })
                    }
                }
                group.addTask { await self.snapshotLoop() }
                await self.loadLoop()
            }
        }
    }

    private func loadLoop() async {
        var delay = Duration.seconds(5)
        while !Task.isCancelled {
            do {
                work.raise(workName)
                let count = try await load()
                // A gap during the read asked for another: the work stays pending until that one.
                progress.endRead { work.lower(workName) }
                logger.info("Curated answers read from the FAQ forum", metadata: ["answers": "\(count)"])
                delay = .seconds(5)
            } catch {
                progress.endRead(failed: true) { work.lower(workName) }
                if Task.isCancelled { return }
                logger.warning("Could not read the FAQ forum; trying again", metadata: ["error": "\(error)", "in": "\(delay)"])
                guard (try? await time.sleep(for: delay)) != nil else { return }
                delay = min(delay * 2, .seconds(300))
                continue
            }
            guard await reloads.wait() else { return }
        }
    }

    /// One post read again (another replica heard it change): its title, tags and starter, or
    /// gone when Discord says so.
    func refresh(_ thread: String) async {
        do {
            try await Deadline.within(.seconds(30)) {
                let channel: DiscordChannel
                do {
                    channel = try await discord.channel(thread)
                } catch let error as DiscordError {
                    guard case .api(let failure) = error, failure.status == 404 else { throw error }
                    await book.remove(thread)
                    return
                } catch {
                    throw error
                }
                guard channel.parentId == forumID else { return }
                if await !book.knowsTags(channel.appliedTags ?? []) { try? await refreshTags() }
                await book.post(thread, title: channel.name ?? "", tagIDs: channel.appliedTags ?? [])
                if let message = try await starter(of: thread) {
                    try await take(message, post: thread)
                } else {
                    await book.remove(thread)
                }
            }
        } catch {
            logger.warning("Could not read a FAQ post another replica heard change", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }

    /// Tells the other replicas what changed.
    private func announce(_ change: FAQChange) async {
        guard let bus else { return }
        do {
            try await bus.announce(change.payload)
        } catch {
            logger.notice("Could not tell the other replicas of a FAQ change", metadata: ["error": "\(error)"])
        }
    }

    /// Events may have been missed (a gap, a new gateway session): read the forum again.
    func reload() {
        progress.gap { work.raise(workName) }
        reloads.signal()
    }

    /// The snapshot the store keeps into the book, when it is this forum's.
    private func restore() async {
        guard let store else { return }
        do {
            guard let text = try await store.globalValue(snapshotKey) else { return }
            let snapshot = try JSONDecoder().decode(FAQBook.Snapshot.self, from: Data(text.utf8))
            guard snapshot.forum == forumID, await book.restore(snapshot) else { return }
            let answers = await book.count
            logger.info("Curated answers restored from the store; reading the FAQ forum again", metadata: ["answers": "\(answers)"])
        } catch {
            logger.notice("Could not restore the curated answers from the store; reading the FAQ forum", metadata: ["error": "\(error)"])
        }
    }

    /// Asks for the book's snapshot to be kept (by `snapshotLoop`, which writes the latest).
    private func keepSnapshot() {
        guard store != nil else { return }
        work.begin(snapshotWorkName)
        snapshotRequests.add()
        snapshotWanted.signal()
    }

    /// Writes the book as it is when woken, one write at a time: a write never overtakes a newer one.
    private func snapshotLoop() async {
        guard let store else { return }
        while await snapshotWanted.wait() {
            let requests = snapshotRequests.take()
            guard requests > 0 else { continue }
            do {
                let data = try JSONEncoder().encode(await book.snapshot(forum: forumID))
                try await store.setGlobalValue(snapshotKey, to: String(decoding: data, as: UTF8.self))
            } catch {
                logger.notice("Could not keep the curated answers in the store", metadata: ["error": "\(error)"])
            }
            work.end(snapshotWorkName, count: requests)
        }
    }

    /// Reads every post of the forum and its starter (only the stale ones' starters after a gap
    /// in a read, see the type's note); returns how many answers the book holds.
    @discardableResult
    func load() async throws -> Int {
        progress.begin()
        let held = await book.count > 0
        await book.beginLoad()
        // Roles and overwrites may have changed while the feed was away: read them afresh.
        authors.forget()
        try await refreshTags()
        var threads = try await discord.activeThreads(guildID: guildID).threads.filter { $0.parentId == forumID }
        var before: String?
        for _ in 0..<Self.maxArchivedPages {
            let page = try await discord.archivedPublicThreads(in: forumID, before: before)
            threads += page.threads
            guard page.hasMore, let last = page.threads.last?.threadMetadata?.archiveTimestamp, last != before else { break }
            before = last
        }
        // Deleted posts go now, not when every starter has been read.
        await book.prune(keeping: Set(threads.map(\.id)))
        var loaded: [String: FAQBook.Post] = [:]
        // Whether each author may answer, asked once per author in a read.
        var verdicts: [String: Bool] = [:]
        var verdictsGeneration = progress.generation
        var read = 0
        for thread in threads where loaded[thread.id] == nil {
            if progress.isCurrent(thread.id), let kept = await book.held(thread.id), kept.starter != nil {
                // Fetched since the last gap: the gateway's events since have kept it current.
                loaded[thread.id] = FAQBook.Post(
                    title: thread.name ?? "", tagIDs: thread.appliedTags ?? [], starter: kept.starter, attachments: kept.attachments)
                continue
            }
            if held, read > 0 { try await time.sleep(for: Self.heldReadInterval) }
            read += 1
            let generation = progress.generation
            if generation != verdictsGeneration {
                // A gap: who may write may have changed unheard.
                (verdicts, verdictsGeneration) = ([:], generation)
                authors.forget()
            }
            guard let starter = try await starter(of: thread.id) else { continue }
            defer { progress.fetched(thread.id, generation: generation) }
            if verdicts[starter.author.id] == nil { verdicts[starter.author.id] = try await authors.mayAnswer(starter) }
            guard verdicts[starter.author.id] == true else {
                logger.notice("A FAQ post by a member who may not use the desk is no answer", metadata: Self.metadata(starter))
                continue
            }
            loaded[thread.id] = FAQBook.Post(
                title: thread.name ?? "", tagIDs: thread.appliedTags ?? [], starter: starter.content, attachments: Self.files(of: starter))
            // A book with nothing to suggest yet (the first start) suggests as the read goes, a
            // hundred answers at a time, instead of when it ends.
            if !held, loaded.count.isMultiple(of: Self.coldBatch) { await book.add(loaded) }
        }
        await book.load(loaded)
        keepSnapshot()
        return await book.count
    }

    /// The gateway's FAQ events into the book, and word of them to the other replicas; false for
    /// any other event.
    func apply(_ event: ForumEvent) async -> Bool {
        let post: String
        switch event {
        case .faqPost(let thread, _, _), .faqStarterChanged(let thread), .faqPostDeleted(let thread): post = thread
        case .faqStarter(let message): post = message.channelId
        case .faqAccessChanged:
            // The next post or edit is judged by the roles and overwrites as they are now, here
            // and on the other replicas.
            authors.forget()
            await announce(FAQChange(origin: origin, access: true, forum: forumID))
            return true
        default: return false
        }
        let applied = await applyHere(event)
        keepSnapshot()
        await announce(FAQChange(origin: origin, post: post, forum: forumID))
        return applied
    }

    private func applyHere(_ event: ForumEvent) async -> Bool {
        switch event {
        case .faqPost(let thread, let title, let tags):
            if await !book.knowsTags(tags) { try? await refreshTags() }
            await book.post(thread, title: title, tagIDs: tags)
        case .faqStarter(let message):
            do {
                try await Deadline.within(.seconds(30)) { try await take(message, post: message.channelId) }
            } catch {
                // Left as it was: a new post is no answer yet, an answer keeps its last words.
                logger.warning("Could not tell whether a FAQ post's author may answer", metadata: ["thread": "\(message.channelId)", "error": "\(error)"])
            }
        case .faqStarterChanged(let thread):
            do {
                try await Deadline.within(.seconds(30)) {
                    if let message = try await starter(of: thread) {
                        try await take(message, post: thread)
                    } else {
                        await book.remove(thread)
                    }
                }
            } catch {
                logger.warning("Could not read an edited FAQ answer", metadata: ["thread": "\(thread)", "error": "\(error)"])
            }
        case .faqPostDeleted(let thread):
            await book.remove(thread)
        default:
            return false
        }
        return true
    }

    /// A post's starter into the book: the answer when its author may answer, otherwise none.
    private func take(_ message: DiscordMessage, post thread: String) async throws {
        if try await authors.mayAnswer(message) {
            await book.starter(thread, content: message.content, attachments: Self.files(of: message))
        } else {
            logger.notice("A FAQ post by a member who may not use the desk is no answer", metadata: Self.metadata(message))
            await book.withhold(thread)
        }
    }

    private static func metadata(_ message: DiscordMessage) -> Logger.Metadata {
        ["thread": "\(message.channelId)", "author": "\(message.author.id)"]
    }

    static func files(of message: DiscordMessage) -> [MirroredMessage.Attachment] {
        message.attachments.compactMap { attachment in
            Snowflake(attachment.id).map {
                MirroredMessage.Attachment(
                    id: $0, filename: attachment.filename, size: attachment.size, contentType: attachment.contentType, url: attachment.url,
                    proxyURL: attachment.proxyUrl, width: attachment.width, height: attachment.height)
            }
        }
    }

    private func refreshTags() async throws {
        let forum = try await discord.channel(forumID)
        await book.setTags(Dictionary((forum.availableTags ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first }))
    }

    /// A post's starter message (its id is the thread's); nil when it is gone.
    private func starter(of thread: String) async throws -> DiscordMessage? {
        do {
            return try await discord.message(thread, in: thread)
        } catch .api(let failure) where failure.status == 404 {
            return nil
        }
    }
}

/// What one replica tells the others on the live bus: a FAQ post changed, or who may write
/// answers did. Not a live event's shape, so the live hub passes it by.
struct FAQChange: Codable, Equatable {
    var origin: String
    var post: String?
    var access: Bool?
    /// The FAQ forum it is about (each app has its own); nil from a replica of a version before.
    var forum: String?

    init(origin: String, post: String? = nil, access: Bool? = nil, forum: String? = nil) {
        (self.origin, self.post, self.access, self.forum) = (origin, post, access, forum)
    }

    private enum CodingKeys: String, CodingKey { case origin = "faqOrigin", post = "faqPost", access = "faqAccess", forum = "faqForum" }

    init?(_ payload: String) {
        guard let change = try? JSONDecoder().decode(FAQChange.self, from: Data(payload.utf8)) else { return nil }
        self = change
    }

    var payload: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }
}

/// Which starters a read of the FAQ forum must fetch: those not fetched since the last gap (a
/// restored snapshot's, and everything after a gap, included). One fetched since is current: the
/// gateway's events have kept it so. Also whether a gap during a read asks for another read.
final class ReadProgress: Sendable {
    private struct State {
        /// Posts whose starter was fetched since the last gap.
        var current: Set<String> = []
        /// Moves on at every gap.
        var generation = 0
        /// A gap came since the last read began: another read is due.
        var gapSinceBegin = false
    }

    private let state = Mutex(State())

    /// A read begins.
    func begin() {
        state.withLock { $0.gapSinceBegin = false }
    }

    /// The gaps so far: a fetch counts as current only if none came while it ran.
    var generation: Int { state.withLock { $0.generation } }

    /// Whether the post's starter was fetched since the last gap.
    func isCurrent(_ post: String) -> Bool {
        state.withLock { $0.current.contains(post) }
    }

    /// The read fetched this post's starter; it began at `generation`.
    func fetched(_ post: String, generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.current.insert(post) }
        }
    }

    /// A read ended (`failed` or not): `lower` runs, under this lock, unless a gap since it began
    /// asked for another read (a failed read is tried again anyway).
    func endRead(failed: Bool = false, lower: () -> Void) {
        state.withLock { state in
            if failed || !state.gapSinceBegin { lower() }
        }
    }

    /// Events may have been missed: nothing fetched so far is current. `raise` runs under this lock.
    func gap(raise: () -> Void) {
        state.withLock { state in
            state.generation += 1
            state.current = []
            state.gapSinceBegin = true
            raise()
        }
    }
}

/// Snapshot writes asked for and not yet written.
final class SnapshotRequests: Sendable {
    private let count = Mutex(0)

    func add() { count.withLock { $0 += 1 } }

    /// The requests so far, now answered.
    func take() -> Int {
        count.withLock { count in
            defer { count = 0 }
            return count
        }
    }
}
