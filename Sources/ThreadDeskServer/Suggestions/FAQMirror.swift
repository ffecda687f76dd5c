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
    let bus: (any LiveBus)?
    let origin = UUID().uuidString
    let reloads = WakeSignal()
    let work: BackgroundWork
    /// The app whose FAQ forum it is: its users alone are suggested its answers.
    let app: AppID
    let progress = ReadProgress()
    /// The book's snapshot in the store; nil keeps none.
    let snapshots: FAQSnapshots?
    /// The names of its work for `BackgroundWork` (each app's forum its own).
    var workName: String { app == .default ? "FAQ forum" : "FAQ forum \(app)" }
    /// Between two starters read while the book already holds answers: 10 a second at most, a
    /// fifth of Discord's global 50 (1,000 posts in 100 s), the rest left to the users.
    static let heldReadInterval = Duration.milliseconds(100)
    /// Answers a first read hands to an empty book at a time (each batch rebuilds the index once).
    static let coldBatch = 100
    /// Archived pages read at most (100 posts each).
    static let maxArchivedPages = 100

    var description: String { "FAQMirror(forum \(forumID))" }

    /// `store`: where the book's snapshot is kept; nil keeps none.
    init(
        book: FAQBook, authors: FAQAuthors, discord: DiscordClient<AnyClock>, guildID: String, forumID: String, logger: Logger, time: ServerTime,
        bus: (any LiveBus)? = nil, store: (any GlobalValues)? = nil, work: BackgroundWork = .untracked, app: AppID = .default
    ) {
        (self.book, self.authors, self.discord, self.guildID, self.forumID, self.logger, self.time) = (book, authors, discord, guildID, forumID, logger, time)
        (self.bus, self.work, self.app) = (bus, work, app)
        snapshots = store.map { FAQSnapshots(store: $0, book: book, forumID: forumID, app: app, work: work, logger: logger) }
    }

    func run() async throws {
        await snapshots?.restore()
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
                if let snapshots { group.addTask { await snapshots.run() } }
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

    /// Tells the other replicas what changed.
    func announce(_ change: FAQChange) async {
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
}
