import Foundation
import Observation

/// The conversation as the device holds it: the timeline of messages, the read state, whether
/// older pages exist and where the stream stands; pages fetched into it, and its copy kept on the
/// device. Whose conversation it is, too: a user change starts it anew. Each page also says
/// whether a rating waits, which goes to `rating`.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationHistory {
    /// The messages with their order kept by id: the server's, then the ones still on the device.
    var timeline = ConversationTimeline()
    var unreadCount = 0
    var lastReadMessageID: String?
    var hasEarlier = false
    private(set) var isLoadingEarlier = false
    /// The session's user whose conversation this is; nil until known.
    @ObservationIgnored private(set) var userID: String?
    /// The stream position to resume after.
    @ObservationIgnored var lastEventID: String?

    private let client: ThreadDeskClient
    private let pageSize: Int
    private let deviceStore: ConversationDeviceStore
    private let work: ConversationWork
    private let rating: ConversationRating
    private var serverURL: URL { client.configuration.serverURL }

    init(client: ThreadDeskClient, pageSize: Int, deviceStore: ConversationDeviceStore, work: ConversationWork, rating: ConversationRating) {
        self.client = client
        self.pageSize = pageSize
        self.deviceStore = deviceStore
        self.work = work
        self.rating = rating
    }

    /// The session's user, with what the device kept of their conversation (if it is theirs).
    func adopt(userID: String, _ snapshot: ConversationSnapshot?) {
        self.userID = userID
        guard let snapshot else { return }
        timeline.merge(snapshot.messages)
        lastEventID = snapshot.lastEventID
        unreadCount = snapshot.unreadCount
        lastReadMessageID = snapshot.lastReadMessageID
        hasEarlier = snapshot.hasEarlier
    }

    /// Nothing of the user before stays (a user change).
    func forget() {
        timeline = ConversationTimeline()
        lastEventID = nil
        unreadCount = 0
        lastReadMessageID = nil
        hasEarlier = false
    }

    /// The screen's copy of a server message.
    func shown(_ message: SupportMessage) -> ConversationMessage {
        ConversationMessage(message, server: serverURL)
    }

    /// A server message from an answer or a page, which may be older than what the stream
    /// brought meanwhile: a message support has (`sent`) is not taken back to `queued` by it.
    func upsert(_ message: ConversationMessage) {
        if let held = timeline.message(id: message.id), Self.isStale(message, comparedWith: held) { return }
        timeline.upsert(message)
    }

    func merge(_ page: [ConversationMessage]) {
        timeline.merge(page.filter { message in timeline.message(id: message.id).map { !Self.isStale(message, comparedWith: $0) } ?? true })
    }

    private static func isStale(_ message: ConversationMessage, comparedWith held: ConversationMessage) -> Bool {
        held.delivery == .sent && message.delivery == .queued && held.text == message.text
    }

    // MARK: Pages

    /// Fetches the page before the oldest message held (the user scrolled to the top).
    func loadEarlier() async {
        guard hasEarlier, !isLoadingEarlier, let oldest = timeline.oldestConfirmed?.id else { return }
        isLoadingEarlier = true
        defer { isLoadingEarlier = false }
        do {
            let page = try await fetch(before: oldest, limit: pageSize)
            merge(page.messages.map { shown($0) })
            hasEarlier = page.hasMore
            saveSoon()
        } catch {
            work.lastError = error
        }
    }

    /// What the server has that is not here: the messages after the newest held, or the newest
    /// page when none is held (the first connection).
    func catchUp() async throws(ThreadDeskError) {
        if let newest = timeline.newestConfirmed?.id {
            var after = newest
            while true {
                let page = try await fetch(after: after, limit: 100)
                merge(page.messages.map { shown($0) })
                guard page.hasMore, let last = page.messages.last?.id else { break }
                after = last
            }
        } else {
            let page = try await fetch(limit: pageSize)
            merge(page.messages.map { shown($0) })
            hasEarlier = page.hasMore
        }
    }

    /// A page, and the rating it says waits (or not) handed on.
    private func fetch(after: String? = nil, before: String? = nil, limit: Int) async throws(ThreadDeskError) -> MessagePage {
        let mark = rating.announced
        let page = try await client.messages(after: after, before: before, limit: limit)
        rating.page(page.ratingRequest, askedAt: mark)
        return page
    }

    /// The server could not replay what was missed: its newest page replaces what is held
    /// (what came on the stream meanwhile kept), then the stream's position moves past the reset.
    func reload(thenResumeAfter position: String?) async {
        do {
            let page = try await fetch(limit: pageSize)
            let fetched = page.messages.map { shown($0) }
            let newer = fetched.last.map { newest in
                timeline.messages[..<timeline.confirmedCount].filter { ConversationTimeline.precedes(newest.id, $0.id) }
            } ?? []
            timeline.replaceConfirmed(with: fetched)
            timeline.merge(Array(newer))
            hasEarlier = page.hasMore
            unreadCount = try await client.unreadCount()
            if let position { lastEventID = position }
        } catch {
            if !Task.isCancelled { work.lastError = error }
        }
        saveSoon()
    }

    // MARK: Read state

    /// The user has seen the conversation up to `messageID` (by default its newest message).
    func markRead(upTo messageID: String?) {
        guard let id = messageID ?? timeline.newestConfirmed?.id else { return }
        if let read = lastReadMessageID, !ConversationTimeline.precedes(read, id), unreadCount == 0 { return }
        work.start {
            do throws(ThreadDeskError) {
                let state = try await self.client.markRead(id)
                self.lastReadMessageID = state.lastReadMessageId
                if self.unreadCount != state.count { self.unreadCount = state.count }
                self.saveSoon()
            } catch {
                if !Task.isCancelled { self.work.lastError = error }
            }
        }
    }

    // MARK: On the device

    /// Keeps the conversation on the device after a moment (changes come in bursts).
    func saveSoon() {
        deviceStore.scheduleSave { cap in self.snapshot(keeping: cap) }
    }

    /// Keeps the conversation on the device now.
    func saveNow() async {
        await deviceStore.save { cap in self.snapshot(keeping: cap) }
    }

    /// The newest `cap` of the server's messages, with the read state and the stream's position.
    private func snapshot(keeping cap: Int) -> ConversationSnapshot? {
        guard let userID else { return nil }
        let kept = timeline.keepingNewest(cap)
        return ConversationSnapshot(
            userID: userID, messages: Array(kept.messages[..<kept.confirmedCount]), lastEventID: lastEventID, unreadCount: unreadCount,
            lastReadMessageID: lastReadMessageID, hasEarlier: hasEarlier || kept.confirmedCount < timeline.confirmedCount)
    }
}
