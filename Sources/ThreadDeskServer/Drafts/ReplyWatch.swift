import ThreadDeskWire
import Logging
import Deadlines
import Foundation
import DiscordREST
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Hears from the mirror who spoke last in each thread, for the drafts: a user's message that
/// leaves a thread needing a reply, an agent's reply that answers it. It only notes the thread
/// and wakes `Drafts`: the caller holds the user's lock, and drafting never runs in a user
/// message's path.
final class ReplyWatch: MirrorListener, Sendable {
    /// What happened in a thread since the drafts last looked.
    struct News: Sendable, Hashable {
        let owner: UserID
        /// The newest user message seen; nil when none came.
        var userWrote: Snowflake?
        /// The newest support reply seen (by an agent, not ThreadDesk's away message nor the assistant's answer).
        var supportReplied: Snowflake?
    }

    private let news = Mutex<[Snowflake: News]>([:])
    let wakeUps = WakeSignal()
    private let catalog: AppCatalog
    private let assist: AssistSettings
    private let work: BackgroundWork
    /// Threads waiting to be looked at, at most: past it news is dropped (the next message brings it again).
    static let limit = 10_000

    private let now: @Sendable () -> Date
    /// A user message older than this when it enters the mirror (history a catch-up brought
    /// back) asks for no draft.
    static let maxAge: TimeInterval = 24 * 3600

    init(catalog: AppCatalog, assist: AssistSettings, work: BackgroundWork, now: @escaping @Sendable () -> Date) {
        (self.catalog, self.assist, self.work, self.now) = (catalog, assist, work, now)
    }

    func mirrorTookIn(_ intake: MirrorIntake) {
        guard let newest = intake.newestShown, let app = catalog.app(of: intake.owner), assist.effective(for: app)?.watchesReplies == true else { return }
        if newest.author == .user, now().timeIntervalSince(newest.id.date) > Self.maxAge { return }
        // ThreadDesk's own away message and the assistant's answers answer nobody: the
        // conversation still waits on the user's message, and its draft (if any) stands.
        if newest.author != .user, Self.isAutomatic(newest, app: app) { return }
        let noted = news.withLock { news in
            guard news[intake.thread] != nil || news.count < Self.limit else { return false }
            var entry = news[intake.thread] ?? News(owner: intake.owner)
            if newest.author == .user {
                entry.userWrote = max(entry.userWrote ?? newest.id, newest.id)
            } else {
                entry.supportReplied = max(entry.supportReplied ?? newest.id, newest.id)
            }
            let fresh = news[intake.thread] == nil
            news[intake.thread] = entry
            if fresh { work.begin(Drafts.workName) }
            return true
        }
        if noted { wakeUps.signal() }
    }

    /// Everything noted, taken: each thread's news once.
    func take() -> [Snowflake: News] {
        news.withLock { news in
            defer { news.removeAll() }
            return news
        }
    }

    /// A message ThreadDesk posted by itself (the away message, sent silent; the assistant's
    /// answer), not an agent's reply.
    static func isAutomatic(_ message: MirroredMessage, app: AppSettings) -> Bool {
        switch message.author {
        case .user: return false
        case .assistant: return true
        case .support:
            guard let away = app.awayMessage else { return false }
            return NoteMarkers.shownReply(message.content) == away
        }
    }
}
