import Foundation
import Observation

/// The conversation's connection: the session opened (again after `reopenDelay` while it fails),
/// the live stream followed and each of its events applied, and a sync with the server whenever
/// the stream comes back (what it could not replay, support's status, the device's unsent messages).
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationLive {
    private(set) var connection: SupportConversation.Connection = .connecting
    private(set) var isSynchronizing = false
    /// Syncs under way (the stream may come back while one runs).
    @ObservationIgnored private var synchronizing = 0
    @ObservationIgnored private var installationSent = false

    private let client: ThreadDeskClient
    private let options: SupportConversation.Options
    private let sleep: @Sendable (Duration) async throws -> Void
    private let history: ConversationHistory
    private let sending: ConversationSending
    private let typing: ConversationTyping
    private let status: ConversationSupportStatus
    private let rating: ConversationRating
    private let work: ConversationWork

    init(
        client: ThreadDeskClient, options: SupportConversation.Options, sleep: @escaping @Sendable (Duration) async throws -> Void,
        history: ConversationHistory, sending: ConversationSending, typing: ConversationTyping, status: ConversationSupportStatus,
        rating: ConversationRating, work: ConversationWork
    ) {
        self.client = client
        self.options = options
        self.sleep = sleep
        self.history = history
        self.sending = sending
        self.typing = typing
        self.status = status
        self.rating = rating
        self.work = work
    }

    /// The session, opened again after `reopenDelay` while that fails (no network at launch);
    /// nil once the calling task is cancelled.
    func openSession() async -> Session? {
        if connection != .connecting { connection = .connecting }
        while !Task.isCancelled {
            do {
                return try await client.open()
            } catch {
                work.lastError = error
                connection = .offline(retryAt: Date().addingTimeInterval(Self.seconds(options.reopenDelay)))
                do { try await sleep(options.reopenDelay) } catch { return nil }
            }
        }
        return nil
    }

    /// Follows the stream from the last event held until the calling task is cancelled, or the
    /// client ends it (signed out, refused).
    func follow() async {
        connection = .connecting
        for await update in client.updates(resumingAfter: history.lastEventID) {
            apply(update)
        }
        if !Task.isCancelled { connection = .offline(retryAt: nil) }
    }

    /// The conversation stopped: offline until started again.
    func stopped() {
        if connection != .offline(retryAt: nil) { connection = .offline(retryAt: nil) }
    }

    /// The user changed: the installation is told again, for the new one.
    func forget() {
        installationSent = false
    }

    /// Applies one live update.
    func apply(_ update: LiveUpdate) {
        // A reset's position counts once what it asks for (the newest page) is here.
        if let position = update.position, !Self.isReset(update.event) { history.lastEventID = position }
        switch update.event {
        case .messageCreated(let message):
            let shown = history.shown(message)
            // The user's own message on the stream before the answer to its send: one copy on
            // screen (a replay of a message held already takes nothing away).
            if history.timeline.message(id: shown.id) == nil { history.timeline.dropLocalCopy(of: shown) }
            history.upsert(shown)
            if !shown.isFromUser { typing.supportSpoke() }
        case .messageUpdated(let message):
            history.timeline.upsert(history.shown(message))
        case .messageDeleted(let id):
            history.timeline.remove(id: id)
        case .read(let id):
            history.lastReadMessageID = id
        case .unread(let count):
            if history.unreadCount != count { history.unreadCount = count }
        case .typing(let until):
            typing.supportTyping(until: until)
        case .ratingRequested(let request):
            rating.requested(request)
        case .reset:
            let position = update.position
            work.start { await self.history.reload(thenResumeAfter: position) }
        case .connection(let state):
            switch state {
            case .live:
                connection = .live
                work.start { await self.synchronize() }
            case .polling:
                connection = .polling
            case .reconnecting(let after):
                connection = .offline(retryAt: Date().addingTimeInterval(after))
            }
        }
        history.saveSoon()
    }

    private static func isReset(_ event: ThreadDeskEvent) -> Bool {
        if case .reset = event { true } else { false }
    }

    /// What happened while the stream was down and could not be replayed, or before the
    /// first connection: new messages since the newest here, support's status, and the
    /// device's unsent messages, kept crash reports, attributes and activity sent.
    func synchronize() async {
        synchronizing += 1
        if !isSynchronizing { isSynchronizing = true }
        defer {
            synchronizing -= 1
            if synchronizing == 0 { isSynchronizing = false }
        }
        do {
            try await history.catchUp()
            status.update(try await client.supportStatus())
            if let installation = options.installation, !installationSent {
                _ = try await client.updateInstallation(installation)
                installationSent = true
            }
        } catch {
            if !Task.isCancelled { work.lastError = error }
        }
        guard !Task.isCancelled else { return }
        sending.deliverWaiting()
        work.start { await self.client.sendCrashReports() }
        work.start {
            let report = await self.client.sendUserContext()
            if let refused = report.refused.last, !Task.isCancelled { self.work.lastError = refused.error }
        }
        history.saveSoon()
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
