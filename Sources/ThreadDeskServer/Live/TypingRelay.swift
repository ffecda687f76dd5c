import Deadlines
import DiscordREST
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore

/// Shows the user typing in Discord without holding up their request: `POST /v1/typing` answers
/// at once and the indicator follows from here, a few at a time. Best effort by nature (Discord
/// shows it for 10 s): a backlog past `capacity` threads, one older than the typing interval by
/// the time its turn comes, or one left at shutdown, is dropped.
/// Asleep while nobody types.
final class TypingRelay: Service, Sendable {
    private let discord: DiscordClient<AnyClock>
    /// How long one indicator may take, waits included; a later one is no use.
    private let timeout: Duration
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Threads to show typing in, with when each was asked for.
    private let pending = Mutex<[(thread: String, at: ContinuousClock.Instant)]>([])
    private let wakeUps = WakeSignal()
    static let capacity = 10_000
    static let concurrency = 8

    private let work: BackgroundWork
    static let workName = "typing relay"

    init(discord: DiscordClient<AnyClock>, timeout: Duration, metrics: ServerMetrics, logger: Logger, work: BackgroundWork = .untracked) {
        (self.discord, self.timeout, self.metrics, self.logger, self.work) = (discord, timeout, metrics, logger, work)
    }

    /// The user of `thread` is typing (already limited to one per thread per interval).
    func relay(_ thread: String) {
        let taken = pending.withLock { pending in
            guard pending.count < Self.capacity else { return false }
            pending.append((thread, .now))
            return true
        }
        if taken {
            work.begin(Self.workName)
            wakeUps.signal()
        } else {
            metrics.live.typingDropped.increment()
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while await self.wakeUps.wait() { await self.flush() }
        }
    }

    private func flush() async {
        while true {
            let threads = pending.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            guard !threads.isEmpty, !Task.isCancelled else {
                work.end(Self.workName, count: threads.count)
                return
            }
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for (thread, at) in threads {
                    // Shutting down, or asked for longer ago than an indicator lasts: no use now.
                    if Task.isCancelled {
                        work.end(Self.workName)
                        continue
                    }
                    if at.duration(to: .now) > timeout {
                        metrics.live.typingDropped.increment()
                        work.end(Self.workName)
                        continue
                    }
                    if running == Self.concurrency {
                        await group.next()
                        running -= 1
                    }
                    group.addTask {
                        await self.show(thread)
                        self.work.end(Self.workName)
                    }
                    running += 1
                }
            }
        }
    }

    private func show(_ thread: String) async {
        do {
            try await Deadline.within(timeout) { try await self.discord.triggerTyping(in: thread) }
            metrics.live.typingSent.increment()
        } catch {
            logger.info("Could not show the user typing in Discord", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }
}
