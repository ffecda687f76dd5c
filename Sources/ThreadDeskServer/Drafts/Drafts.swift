import ThreadDeskWire
import AssistClient
import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Drafted answers: when a user's message leaves a thread needing a reply, a draft grounded in the
/// app's FAQ is posted in the thread as a note with Send / Edit / Discard buttons; nothing reaches
/// the user until an agent clicks. A newer user message replaces a draft not acted on; an agent's
/// reply drops it. Drafting runs beside delivery, never in its path: the provider slow, failing or
/// over budget costs the user nothing, and the thread simply gets no draft.
///
/// A draft's state is in the store and changes under its user's lock, so a button works on any
/// replica and two clicks, two agents or a click delivered twice act once.
final class Drafts: Service, Sendable, CustomStringConvertible {
    struct Parts: Sendable {
        let users: UserSerializer
        let store: any UserStore
        let discord: DiscordClient<AnyClock>
        let ingestion: MirrorIngestion
        let voice: SupportVoice
        let faq: FAQShelf
        let assist: AssistService
        let watch: ReplyWatch
        let catalog: AppCatalog
        let desk: DeskSettings
        let ids: MessageIDs
        let logger: Logger
        let time: ServerTime
    }

    let parts: Parts
    private let work: BackgroundWork
    /// Threads being looked at now; news for one of them waits for its turn.
    private let busy = Mutex<Set<Snowflake>>([])
    /// News held back while its thread is busy.
    private let held = Mutex<[Snowflake: ReplyWatch.News]>([:])
    static let workName = "drafts"
    /// FAQ answers given to the model.
    static let matches = 3
    /// How long one thread's turn may take (a provider call within `ASSIST_TIMEOUT_SECONDS`, and Discord).
    static let turnTimeout: Duration = .seconds(120)
    /// A draft being sent for longer than this was cut off by a crash: it may or may not have gone.
    static let sendingGivenUpAfter: TimeInterval = 120

    var description: String { "Drafts" }

    init(_ parts: Parts, work: BackgroundWork = .untracked) {
        self.parts = parts
        self.work = work
    }

    /// Button clicks and modal submits waiting for their turn.
    private let clicks = Mutex<[DiscordInteraction]>([])
    /// Clicks being answered now, at most `clickLimit`.
    private let answering = Mutex(0)
    static let clickLimit = 32
    /// Clicks waiting beyond this many are dropped: Discord tells the agent the click failed.
    static let clickQueueLimit = 256
    /// How long one click may take in all.
    static let clickTimeout: Duration = .seconds(60)

    /// A click on a draft's button, or the edit modal's submit, as the gateway heard it.
    func receive(_ interaction: DiscordInteraction) {
        let accepted = clicks.withLock { clicks in
            guard clicks.count < Self.clickQueueLimit else { return false }
            clicks.append(interaction)
            return true
        }
        if accepted {
            work.begin(Self.workName)
            parts.watch.wakeUps.signal()
        } else {
            parts.logger.warning("Too many draft button clicks at once; one was dropped")
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    let room = Self.clickLimit - self.answering.withLock { $0 }
                    let taken = self.clicks.withLock { clicks in
                        let taken = Array(clicks.prefix(max(0, room)))
                        clicks.removeFirst(taken.count)
                        return taken
                    }
                    self.answering.withLock { $0 += taken.count }
                    for interaction in taken {
                        group.addTask {
                            do {
                                try await Deadline.within(Self.clickTimeout) { try await self.answer(interaction) }
                            } catch {
                                self.parts.logger.warning("Could not answer a draft's button", metadata: ["interaction": "\(interaction)", "error": "\(error)"])
                            }
                            self.answering.withLock { $0 -= 1 }
                            self.work.end(Self.workName)
                            self.parts.watch.wakeUps.signal()
                        }
                    }
                    let news = self.parts.watch.take()
                    if news.isEmpty {
                        if taken.isEmpty { _ = await self.parts.watch.wakeUps.wait() }
                        continue
                    }
                    for (thread, item) in news {
                        // One turn per thread at a time; news for a busy thread joins what it will do next.
                        let start = self.busy.withLock { busy in busy.insert(thread).inserted }
                        if !start {
                            self.held.withLock { held in held[thread] = Self.merged(held[thread], item) }
                            self.work.end(Self.workName)
                            continue
                        }
                        group.addTask {
                            await self.turns(thread, item)
                            self.work.end(Self.workName)
                        }
                    }
                }
            }
        }
    }

    /// The thread's turns: this news, then whatever came while it ran.
    private func turns(_ thread: Snowflake, _ first: ReplyWatch.News) async {
        var next: ReplyWatch.News? = first
        while let news = next {
            do {
                try await Deadline.within(Self.turnTimeout) { try await self.turn(thread, news) }
            } catch {
                parts.logger.notice("A draft turn failed", metadata: ["thread": "\(thread)", "error": "\(error)"])
            }
            next = busy.withLock { busy in
                let more = held.withLock { $0.removeValue(forKey: thread) }
                if more == nil { busy.remove(thread) }
                return more
            }
        }
    }

    static func merged(_ earlier: ReplyWatch.News?, _ later: ReplyWatch.News) -> ReplyWatch.News {
        guard var merged = earlier else { return later }
        if let user = later.userWrote { merged.userWrote = max(merged.userWrote ?? user, user) }
        if let reply = later.supportReplied { merged.supportReplied = max(merged.supportReplied ?? reply, reply) }
        return merged
    }

    /// What one piece of news does: settles the drafts it outdates, then (after the delay, so a
    /// burst of messages gets one draft) drafts an answer to the newest user message.
    private func turn(_ thread: Snowflake, _ news: ReplyWatch.News) async throws {
        guard let app = parts.catalog.app(of: news.owner), let settings = parts.assist.settings(for: app), settings.drafts else { return }
        if let reply = news.supportReplied { try await settle(thread, owner: news.owner, answeredBefore: reply, as: .dropped) }
        guard let newest = news.userWrote else { return }
        try await settle(thread, owner: news.owner, answeredBefore: newest, as: .replaced)
        let delay = parts.assist.deployment.draftDelay
        if delay > .zero {
            // This turn's piece of work sleeps on the server's clock (a test's manual clock moves it).
            try await work.endSleepThenBegin(Self.workName, for: delay, on: parts.time)
            // A newer message in the meantime drafts instead (its news is held for this thread).
            if held.withLock({ $0[thread]?.userWrote.map { $0 > newest } ?? false }) { return }
        }
        try await compose(thread, owner: news.owner, answering: newest, app: app)
    }
}
