import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Shows the agent in Discord what the user has read: one reaction, on the newest support
/// message the user has read, moved (never multiplied) as they read on. Reads are collected
/// and applied at most every `delay` per user, so a user scrolling costs Discord two calls.
final class ReadReceipts: Service, Sendable {
    private let store: any UserStore
    private let discord: DiscordClient<AnyClock>
    private let emoji: String
    private let delay: Duration
    private let timeout: Duration
    private let logger: Logger
    private let time: ServerTime
    private let pending = Mutex<Set<UserID>>([])
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork
    static let workName = "read receipts"

    init(
        store: any UserStore, discord: DiscordClient<AnyClock>, emoji: String, delay: Duration, timeout: Duration, logger: Logger,
        time: ServerTime, work: BackgroundWork = .untracked
    ) {
        self.time = time
        self.work = work
        self.store = store
        self.discord = discord
        self.emoji = emoji
        self.delay = delay
        self.timeout = timeout
        self.logger = logger
    }

    /// The user's read mark moved.
    func schedule(_ user: UserID) {
        pending.withLock {
            $0.insert(user)
            work.raise(Self.workName)
        }
        wakeUps.signal()
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while await self.wakeUps.wait() {
                // Let a burst of reads settle into one move.
                guard (try? await self.time.sleep(for: self.delay)) != nil else { break }
                await self.flush()
                // Done unless a read came meanwhile (its wake-up brings the next round).
                self.pending.withLock { if $0.isEmpty { self.work.lower(Self.workName) } }
            }
        }
        // What was read just before shutdown still shows, within the request deadline. (A task of
        // its own, so the drain can leave it behind when Discord does not answer in time.)
        await drain(Task { await self.flush() }, within: timeout)
    }

    private func flush() async {
        let users = pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for user in users {
                if running == 4 {
                    await group.next()
                    running -= 1
                }
                group.addTask { await self.move(user) }
                running += 1
            }
        }
    }

    private func move(_ user: UserID) async {
        do {
            try await Deadline.within(timeout) {
                try await store.withUser(user) { context in
                    guard var record = context.record, let thread = record.threadID.flatMap({ Snowflake($0) }),
                        let read = record.lastReadMessageID.flatMap({ Snowflake($0) })
                    else { return }
                    let page = try await store.mirrorPage(thread: thread, .before(Snowflake(read.rawValue + 1)), limit: 50)
                    guard let target = page.messages.last(where: { $0.author != .user })?.id.description,
                        target != record.live.reactionMessageID
                    else { return }
                    try await discord.addReaction(emoji, to: target, in: thread.description)
                    if let old = record.live.reactionMessageID {
                        do {
                            try await discord.removeOwnReaction(emoji, from: old, in: thread.description)
                        } catch let error as DiscordError {
                            // The old message is gone: nothing to move.
                            guard case .api(let failure) = error, failure.status == 404 else { throw error }
                        }
                    }
                    record.live.reactionMessageID = target
                    context.record = record
                }
            }
        } catch {
            logger.notice("Could not show a read receipt in Discord", metadata: ["user": "\(user.logValue)", "error": "\(error)"])
        }
    }
}
