import Foundation
import Observation

/// The support chat's state, for a screen to bind to (SwiftUI, or UIKit through
/// `withObservationTracking`): the messages with their delivery, support typing, the unread
/// count, whether support is in, suggestions for the draft, and the connection.
///
/// ```swift
/// @State var conversation = SupportConversation(client: support)
/// var body: some View {
///     SupportChatView(conversation: conversation)
///         .task { await conversation.run() }
/// }
/// ```
///
/// It merges the conversation's pages with its live events (each message once, in order),
/// resumes the stream from its last event after the app comes back, keeps the conversation on
/// the device (``ConversationStore``) so the chat opens offline with its history and unsent
/// messages, and sends those when the network returns. Everything happens on the main actor;
/// network calls suspend, never block it.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class SupportConversation {
    /// How the conversation reaches the server right now.
    public enum Connection: Sendable, Hashable {
        /// Opening the session or the stream.
        case connecting
        /// Live: messages, edits and typing arrive as they happen.
        case live
        /// The stream is unavailable; new messages are polled for.
        case polling
        /// No connection; the next attempt is at `retryAt` (nil: when the app asks again).
        case offline(retryAt: Date?)
    }

    public struct Options: Sendable {
        /// Messages fetched at a time (a first page, ``SupportConversation/loadEarlier()``).
        public var pageSize = 50
        /// Quiet time after the last keystroke before suggestions are asked for.
        public var suggestionDelay: Duration = .milliseconds(300)
        /// At most one typing report this often.
        public var typingInterval: Duration = .seconds(3)
        /// The device store is written at most this often (and when the conversation stops).
        public var saveDelay: Duration = .seconds(1)
        /// The wait before opening the session again after it failed (no network at launch).
        public var reopenDelay: Duration = .seconds(5)
        /// Told to support once the conversation is live (``ThreadDeskClient/updateInstallation(_:)``).
        public var installation: [String: InstallationValue]?

        public init() {}
    }

    // MARK: State

    /// The messages, oldest first: the server's, then the ones still on the device.
    public var messages: [ConversationMessage] { timeline.messages }
    /// The messages with their order kept by id (what ``messages`` reads).
    public private(set) var timeline = ConversationTimeline()
    /// Support is typing; ends when the server's moment passes or support's message comes.
    public private(set) var isSupportTyping = false
    /// Support messages the user has not read (what the app's badge shows).
    public private(set) var unreadCount = 0
    /// The newest message the user has read (on any of their devices).
    public private(set) var lastReadMessageID: String?
    /// Whether support is in; nil until known.
    public private(set) var supportStatus: SupportStatus?
    /// Curated answers matching the draft, best first.
    public private(set) var suggestions: [Suggestion] = []
    public private(set) var connection: Connection = .connecting
    /// Older messages exist on the server than the first one here.
    public private(set) var hasEarlier = false
    public private(set) var isLoadingEarlier = false
    /// Catching up with the server (after the stream came back, or at launch).
    public private(set) var isSynchronizing = false
    /// The last failure of something the user did (sending aside: a message shows its own).
    public private(set) var lastError: ThreadDeskError?
    /// The text being written. Setting it reports typing to support (throttled) and asks for
    /// suggestions once the user pauses.
    public var draft = "" {
        didSet { if draft != oldValue { draftChanged() } }
    }
    /// Files to go with the next ``send()``.
    public var draftFiles: [OutgoingFile] = []

    @ObservationIgnored public let client: ThreadDeskClient
    @ObservationIgnored public let options: Options
    @ObservationIgnored private let store: (any ConversationStore)?
    @ObservationIgnored private let sleep: @Sendable (Duration) async throws -> Void
    @ObservationIgnored private let elapsed: @Sendable () -> Duration
    @ObservationIgnored private var serverURL: URL { client.configuration.serverURL }
    @ObservationIgnored private var userID: String?
    @ObservationIgnored private var lastEventID: String?
    /// The device's messages by their outbox key: waiting to be confirmed, or refused before the
    /// server took them (kept to be sent again). One whose server copy came first (on the stream,
    /// before the answer to its send) is off the screen but still here until its send confirms it.
    @ObservationIgnored private var localEntries: [String: OutboxEntry] = [:]
    /// Keys whose send is under way.
    @ObservationIgnored private var delivering: Set<String> = []
    /// Keys withdrawn while their send was under way.
    @ObservationIgnored private var discarded: Set<String> = []
    /// New texts for messages whose send has been tried already (the key holds the old text):
    /// applied as an edit once the server confirms the message.
    @ObservationIgnored private var pendingEdits: [String: String] = [:]
    /// Sends in a row that found no server, by key: the next waits longer.
    @ObservationIgnored private var attempts: [String: Int] = [:]
    @ObservationIgnored private var openedSuggestionID: String?
    @ObservationIgnored private var lastTypingReport: Duration?
    @ObservationIgnored private var installationSent = false
    @ObservationIgnored private var synchronizing = 0
    @ObservationIgnored private var runTask: Task<Void, Never>?
    @ObservationIgnored private var runGeneration = 0
    @ObservationIgnored private var suggestionTask: Task<Void, Never>?
    @ObservationIgnored private var typingExpiry: Task<Void, Never>?
    @ObservationIgnored private var saveTask: Task<Void, Never>?
    @ObservationIgnored private var statusRefresh: Task<Void, Never>?
    @ObservationIgnored private var work: [UUID: Task<Void, Never>] = [:]

    /// - Parameters:
    ///   - client: the client the conversation talks through.
    ///   - store: where the conversation is kept on the device (``FileConversationStore/standard()``
    ///     in an app); nil keeps nothing.
    ///   - options: page size, debounce and throttles (``Options``).
    public convenience init(client: ThreadDeskClient, store: (any ConversationStore)? = nil, options: Options = Options()) {
        self.init(client: client, store: store, options: options, clock: ContinuousClock())
    }

    /// As ``init(client:store:options:)``, with `clock` what the typing expiry, debounce and
    /// throttles wait on (a test's own clock).
    public init<C: Clock>(client: ThreadDeskClient, store: (any ConversationStore)?, options: Options = Options(), clock: C)
    where C.Duration == Duration {
        self.client = client
        self.store = store
        self.options = options
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { try await clock.sleep(for: $0) }
    }

    // MARK: Running

    /// Starts the conversation in a task of its own (``run()`` in a view's `.task` is the
    /// alternative); calling it while running does nothing.
    public func start() {
        guard runTask == nil else { return }
        runGeneration += 1
        let generation = runGeneration
        runTask = Task {
            await self.run()
            // Ended by itself (signed out, refused): the next start() starts again.
            if self.runGeneration == generation { self.runTask = nil }
        }
    }

    /// Stops the stream (the app went to the background, the screen closed), waits for the work
    /// under way to end (sends cancelled stay in the outbox, sent at the next start) and writes
    /// the device store; ``start()`` resumes from the last event, without gaps or repeats.
    public func stop() async {
        let running = runTask
        runTask = nil
        runGeneration += 1
        running?.cancel()
        for task in [suggestionTask, typingExpiry, statusRefresh, saveTask] { task?.cancel() }
        let pending = Array(work.values)
        for task in pending { task.cancel() }
        await running?.value
        for task in pending { await task.value }
        saveTask = nil
        if isSupportTyping { isSupportTyping = false }
        if connection != .offline(retryAt: nil) { connection = .offline(retryAt: nil) }
        await saveNow()
    }

    /// Runs the conversation until the calling task is cancelled: the device's history and
    /// unsent messages at once, then the session, the stream, and sync whenever it comes back.
    public func run() async {
        // What the device holds, shown in one step: the kept conversation and the unsent messages.
        let kept = await client.keptUserID()
        let keptSnapshot = kept == nil || kept == userID ? nil : await snapshot(of: kept!)
        let entries = (try? await client.pendingMessages()) ?? []
        if let kept, kept != userID { adopt(userID: kept, keptSnapshot, entries: entries) } else { showEntries(entries) }
        if connection != .connecting { connection = .connecting }
        while !Task.isCancelled {
            do {
                let session = try await client.open()
                if session.userId != userID {
                    let snapshot = await snapshot(of: session.userId)
                    let entries = (try? await client.pendingMessages()) ?? []
                    adopt(userID: session.userId, snapshot, entries: entries)
                }
                break
            } catch {
                lastError = error
                connection = .offline(retryAt: Date().addingTimeInterval(Self.seconds(options.reopenDelay)))
                do { try await sleep(options.reopenDelay) } catch { return }
            }
        }
        if Task.isCancelled { return }
        connection = .connecting
        for await update in client.updates(resumingAfter: lastEventID) {
            apply(update)
        }
        if !Task.isCancelled { connection = .offline(retryAt: nil) }
        await saveNow()
    }

    /// The kept conversation of `user`; another user's (after a sign-out) is forgotten.
    private func snapshot(of user: String) async -> ConversationSnapshot? {
        guard let store, let snapshot = try? await store.load() else { return nil }
        guard snapshot.userID == user else {
            try? await store.save(nil)
            return nil
        }
        return snapshot
    }

    /// The session's user, with what the device kept of their conversation and the outbox's
    /// messages: nothing of a user before (their state, their messages) stays.
    private func adopt(userID: String, _ snapshot: ConversationSnapshot?, entries: [OutboxEntry]) {
        if self.userID != nil {
            for task in work.values { task.cancel() }
            timeline = ConversationTimeline()
            localEntries = [:]
            discarded = []
            pendingEdits = [:]
            attempts = [:]
            lastEventID = nil
            unreadCount = 0
            lastReadMessageID = nil
            hasEarlier = false
            supportStatus = nil
            suggestions = []
            installationSent = false
        }
        self.userID = userID
        if let snapshot {
            timeline.merge(snapshot.messages)
            lastEventID = snapshot.lastEventID
            unreadCount = snapshot.unreadCount
            lastReadMessageID = snapshot.lastReadMessageID
            hasEarlier = snapshot.hasEarlier
        }
        showEntries(entries)
    }

    /// The outbox's messages, those not on screen yet (nor known already).
    private func showEntries(_ entries: [OutboxEntry]) {
        for entry in entries where localEntries[entry.id] == nil {
            localEntries[entry.id] = entry
            timeline.appendLocal(ConversationMessage(pending: entry))
        }
    }

    // MARK: Events

    /// Applies one live update (what ``run()`` does with each; public for apps that run the
    /// client's ``ThreadDeskClient/updates(resumingAfter:)`` themselves).
    public func apply(_ update: LiveUpdate) {
        // A reset's position counts once what it asks for (the newest page) is here.
        if let position = update.position, !Self.isReset(update.event) { lastEventID = position }
        switch update.event {
        case .messageCreated(let message):
            let shown = ConversationMessage(message, server: serverURL)
            // The user's own message on the stream before the answer to its send: one copy on
            // screen (a replay of a message held already takes nothing away).
            if timeline.message(id: shown.id) == nil { timeline.dropLocalCopy(of: shown) }
            upsert(shown)
            if !shown.isFromUser { supportSpoke() }
        case .messageUpdated(let message):
            timeline.upsert(ConversationMessage(message, server: serverURL))
        case .messageDeleted(let id):
            timeline.remove(id: id)
        case .read(let id):
            lastReadMessageID = id
        case .unread(let count):
            if unreadCount != count { unreadCount = count }
        case .typing(let until):
            supportTyping(until: until)
        case .reset:
            let position = update.position
            background { await self.reload(thenResumeAfter: position) }
        case .connection(let state):
            switch state {
            case .live:
                connection = .live
                background { await self.synchronize() }
            case .polling:
                connection = .polling
            case .reconnecting(let after):
                connection = .offline(retryAt: Date().addingTimeInterval(after))
            }
        }
        scheduleSave()
    }

    private static func isReset(_ event: ThreadDeskEvent) -> Bool {
        if case .reset = event { true } else { false }
    }

    /// A server message from an answer or a page, which may be older than what the stream
    /// brought meanwhile: a message support has (`sent`) is not taken back to `queued` by it.
    private func upsert(_ message: ConversationMessage) {
        if let held = timeline.message(id: message.id), Self.isStale(message, comparedWith: held) { return }
        timeline.upsert(message)
    }

    private func merge(_ page: [ConversationMessage]) {
        timeline.merge(page.filter { message in timeline.message(id: message.id).map { !Self.isStale(message, comparedWith: $0) } ?? true })
    }

    private static func isStale(_ message: ConversationMessage, comparedWith held: ConversationMessage) -> Bool {
        held.delivery == .sent && message.delivery == .queued && held.text == message.text
    }

    private func supportSpoke() {
        typingExpiry?.cancel()
        typingExpiry = nil
        if isSupportTyping { isSupportTyping = false }
    }

    private func supportTyping(until: Date) {
        typingExpiry?.cancel()
        // A device clock far behind the server's would keep it on for long: 15 s at most.
        let left = min(15, until.timeIntervalSinceNow)
        guard left > 0 else { return supportSpoke() }
        if !isSupportTyping { isSupportTyping = true }
        typingExpiry = Task {
            do { try await self.sleep(.milliseconds(Int64((left * 1000).rounded(.up)))) } catch { return }
            self.typingExpiry = nil
            self.isSupportTyping = false
        }
    }

    /// What happened while the stream was down and could not be replayed, or before the
    /// first connection: new messages since the newest here, support's status, and the
    /// device's unsent messages sent.
    private func synchronize() async {
        synchronizing += 1
        if !isSynchronizing { isSynchronizing = true }
        defer {
            synchronizing -= 1
            if synchronizing == 0 { isSynchronizing = false }
        }
        do {
            if let newest = timeline.newestConfirmed?.id {
                var after = newest
                while true {
                    let page = try await client.messages(after: after, limit: 100)
                    merge(page.messages.map { ConversationMessage($0, server: serverURL) })
                    guard page.hasMore, let last = page.messages.last?.id else { break }
                    after = last
                }
            } else {
                let page = try await client.messages(limit: options.pageSize)
                merge(page.messages.map { ConversationMessage($0, server: serverURL) })
                hasEarlier = page.hasMore
            }
            updateStatus(try await client.supportStatus())
            if let installation = options.installation, !installationSent {
                _ = try await client.updateInstallation(installation)
                installationSent = true
            }
        } catch {
            if !Task.isCancelled { lastError = error }
        }
        guard !Task.isCancelled else { return }
        deliverWaiting()
        scheduleSave()
    }

    /// Sends every message of the device that waits (shown or not), oldest first.
    private func deliverWaiting() {
        for entry in localEntries.values.sorted(by: { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }) {
            if case .failed = timeline.message(id: entry.id)?.delivery { continue }
            deliver(entry)
        }
    }

    /// Support's status, asked again when the away time it names is over (hours, or `/away` ending).
    private func updateStatus(_ status: SupportStatus) {
        if supportStatus != status { supportStatus = status }
        statusRefresh?.cancel()
        statusRefresh = nil
        guard status.status == .away, let opening = status.nextOpening.flatMap(Timestamp.date) else { return }
        // At least 30 s: a server whose clock runs behind still says away for a moment after.
        let left = max(30, opening.timeIntervalSinceNow)
        statusRefresh = Task {
            do { try await self.sleep(.milliseconds(Int64(min(left, 86_400) * 1000))) } catch { return }
            guard let status = try? await self.client.supportStatus(), !Task.isCancelled else { return }
            self.updateStatus(status)
        }
    }

    /// The server could not replay what was missed: its newest page replaces what is held
    /// (what came on the stream meanwhile kept), then the stream's position moves past the reset.
    private func reload(thenResumeAfter position: String?) async {
        do {
            let page = try await client.messages(limit: options.pageSize)
            let fetched = page.messages.map { ConversationMessage($0, server: serverURL) }
            let newer = fetched.last.map { newest in
                timeline.messages[..<timeline.confirmedCount].filter { ConversationTimeline.precedes(newest.id, $0.id) }
            } ?? []
            timeline.replaceConfirmed(with: fetched)
            timeline.merge(Array(newer))
            hasEarlier = page.hasMore
            unreadCount = try await client.unreadCount()
            if let position { lastEventID = position }
        } catch {
            if !Task.isCancelled { lastError = error }
        }
        scheduleSave()
    }

    /// A ThreadDesk push came (the app was woken, or the user tapped it): the badge's count, and
    /// the message it announces fetched when the stream is not live to bring it, kept at once
    /// (the app may be suspended again right after).
    public func receive(_ push: SupportPush) async {
        if let pushed = push.userID, let userID, pushed != userID, pushed != Self.localPart(of: userID) { return }
        if let badge = push.badge, badge != unreadCount { unreadCount = badge }
        guard connection != .live else { return }
        if userID == nil {
            guard let session = try? await client.open() else { return }
            let snapshot = await snapshot(of: session.userId)
            let entries = (try? await client.pendingMessages()) ?? []
            if session.userId != userID { adopt(userID: session.userId, snapshot, entries: entries) }
        }
        await synchronize()
        await saveNow()
    }

    /// A push names the user as the app knows them (without the server's app prefix).
    private static func localPart(of userID: String) -> String {
        userID.split(separator: "/", maxSplits: 1).last.map(String.init) ?? userID
    }

    // MARK: Actions

    /// Sends the draft (and ``draftFiles``): shown at once as pending, then queued and sent as
    /// the server and support get it. A suggestion the user opened (``opened(_:)``), or else
    /// the one shown first, is named to support with a text-only message.
    public func send() {
        let text = draft.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty || !draftFiles.isEmpty else { return }
        let suggestion = draftFiles.isEmpty ? (openedSuggestionID ?? suggestions.first?.id) : nil
        let entry = OutboxEntry(text: text, files: draftFiles, suggestionID: suggestion)
        draftFiles = []
        draft = ""
        localEntries[entry.id] = entry
        timeline.appendLocal(ConversationMessage(pending: entry))
        deliver(entry)
    }

    /// The user opened a suggestion: the next message names it to support.
    public func opened(_ suggestion: Suggestion) {
        openedSuggestionID = suggestion.id
    }

    /// Sends a failed message again (or a pending one now).
    public func retry(_ message: ConversationMessage) {
        if let entry = localEntries[message.id] {
            if case .failed = message.delivery {
                // Refused before the server took it: the server kept nothing under its key.
                replaceRefused(entry, text: entry.text)
            } else {
                attempts[entry.id] = nil
                deliver(entry)
            }
            return
        }
        guard message.isConfirmed, message.isFromUser, case .failed = message.delivery else { return }
        background {
            do throws(ThreadDeskError) {
                let sent = try await self.client.edit(message.id, to: message.text)
                self.upsert(ConversationMessage(sent, server: self.serverURL))
            } catch {
                self.lastError = error
            }
        }
    }

    /// Changes the text of one of the user's messages (a failed one goes out again with it).
    public func edit(_ message: ConversationMessage, to text: String) {
        guard message.isFromUser, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
        if let entry = localEntries[message.id] {
            if case .failed = message.delivery {
                replaceRefused(entry, text: text)
            } else {
                // Its key may have reached the server with the old text: the new one follows as an
                // edit once the server confirms the message.
                pendingEdits[entry.id] = text
                timeline.updateLocal(id: entry.id) { $0.text = text }
            }
            return
        }
        background {
            do throws(ThreadDeskError) {
                let edited = try await self.client.edit(message.id, to: text)
                self.upsert(ConversationMessage(edited, server: self.serverURL))
            } catch {
                self.lastError = error
            }
        }
    }

    /// A message the server refused for good goes again as a new one (a new key), in its place.
    private func replaceRefused(_ entry: OutboxEntry, text: String) {
        let fresh = OutboxEntry(text: text, files: entry.files, suggestionID: entry.suggestionID)
        localEntries[entry.id] = nil
        timeline.remove(id: entry.id)
        localEntries[fresh.id] = fresh
        timeline.appendLocal(ConversationMessage(pending: fresh))
        deliver(fresh)
    }

    /// Deletes one of the user's messages; one not yet sent never reaches support.
    public func delete(_ message: ConversationMessage) {
        guard message.isFromUser else { return }
        if localEntries[message.id] != nil {
            localEntries[message.id] = nil
            pendingEdits[message.id] = nil
            timeline.remove(id: message.id)
            if delivering.contains(message.id) { discarded.insert(message.id) }
            background { try? await self.client.discardPending(message.id) }
            return
        }
        background {
            do throws(ThreadDeskError) {
                try await self.client.delete(message.id)
                self.timeline.remove(id: message.id)
                self.scheduleSave()
            } catch {
                self.lastError = error
            }
        }
    }

    /// The user has seen the conversation up to `messageID` (by default its newest message):
    /// the unread count, the badge and support's read receipt follow.
    public func markRead(upTo messageID: String? = nil) {
        guard let id = messageID ?? timeline.newestConfirmed?.id else { return }
        if let read = lastReadMessageID, !ConversationTimeline.precedes(read, id), unreadCount == 0 { return }
        background {
            do throws(ThreadDeskError) {
                let state = try await self.client.markRead(id)
                self.lastReadMessageID = state.lastReadMessageId
                if self.unreadCount != state.count { self.unreadCount = state.count }
                self.scheduleSave()
            } catch {
                if !Task.isCancelled { self.lastError = error }
            }
        }
    }

    /// Fetches the page before the oldest message held (the user scrolled to the top).
    public func loadEarlier() async {
        guard hasEarlier, !isLoadingEarlier, let oldest = timeline.oldestConfirmed?.id else { return }
        isLoadingEarlier = true
        defer { isLoadingEarlier = false }
        do {
            let page = try await client.messages(before: oldest, limit: options.pageSize)
            merge(page.messages.map { ConversationMessage($0, server: serverURL) })
            hasEarlier = page.hasMore
            scheduleSave()
        } catch {
            lastError = error
        }
    }

    /// The bytes of a file of a message (images to show, documents to open).
    public func data(for file: ConversationMessage.File) async throws(ThreadDeskError) -> Data {
        guard let url = file.url else { throw .invalidResponse("\(file.filename) is not on the server yet") }
        return try await client.data(at: url)
    }

    // MARK: Sending

    private func deliver(_ entry: OutboxEntry) {
        guard !delivering.contains(entry.id) else { return }
        delivering.insert(entry.id)
        background {
            defer { self.delivering.remove(entry.id) }
            do throws(ThreadDeskError) {
                let sent = try await self.client.send(entry)
                self.attempts[entry.id] = nil
                if self.discarded.remove(entry.id) != nil {
                    // Withdrawn while the server was taking it: withdrawn there too.
                    try? await self.client.delete(sent.id)
                    return
                }
                guard self.localEntries.removeValue(forKey: entry.id) != nil else { return }
                self.timeline.remove(id: entry.id)
                self.upsert(ConversationMessage(sent, server: self.serverURL))
                if let text = self.pendingEdits.removeValue(forKey: entry.id) {
                    self.edit(self.timeline.message(id: sent.id) ?? ConversationMessage(sent, server: self.serverURL), to: text)
                }
            } catch where error.kind == .pending {
                // Kept on the device: tried again after a while (and whenever the stream comes back).
                self.redeliverLater(entry)
            } catch {
                guard !Task.isCancelled else { return }
                // Refused for good before the server took it (too long, a file it does not take).
                self.timeline.updateLocal(id: entry.id) { $0.delivery = .failed(reason: error.description) }
            }
            self.scheduleSave()
        }
    }

    private func redeliverLater(_ entry: OutboxEntry) {
        guard !Task.isCancelled, localEntries[entry.id] != nil else { return }
        let attempt = attempts[entry.id, default: 0]
        attempts[entry.id] = attempt + 1
        // 5 s, doubling to 2 min: the client's own retries came before each of these.
        let wait = Duration.seconds(min(120, 5 << min(attempt, 5)))
        background {
            do { try await self.sleep(wait) } catch { return }
            guard let entry = self.localEntries[entry.id] else { return }
            self.deliver(entry)
        }
    }

    // MARK: Draft

    private func draftChanged() {
        suggestionTask?.cancel()
        let text = draft
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            suggestions = []
            openedSuggestionID = nil
            return
        }
        let now = elapsed()
        if lastTypingReport.map({ now - $0 >= options.typingInterval }) ?? true {
            lastTypingReport = now
            background { await self.client.typing() }
        }
        suggestionTask = Task {
            do { try await self.sleep(self.options.suggestionDelay) } catch { return }
            guard let found = try? await self.client.suggestions(for: text), !Task.isCancelled, self.draft == text else { return }
            if found != self.suggestions { self.suggestions = found }
        }
    }

    // MARK: The device store

    private func scheduleSave() {
        guard store != nil, saveTask == nil else { return }
        saveTask = Task {
            do { try await self.sleep(self.options.saveDelay) } catch { return }
            self.saveTask = nil
            await self.saveNow()
        }
    }

    private func saveNow() async {
        guard let store, let userID else { return }
        let kept = timeline.keepingNewest(store.messageCap)
        let snapshot = ConversationSnapshot(
            userID: userID, messages: Array(kept.messages[..<kept.confirmedCount]), lastEventID: lastEventID, unreadCount: unreadCount,
            lastReadMessageID: lastReadMessageID, hasEarlier: hasEarlier || kept.confirmedCount < timeline.confirmedCount)
        try? await store.save(snapshot)
    }

    // MARK: Helpers

    /// Work started by an action, cancelled by ``stop()``.
    private func background(_ operation: @escaping @MainActor () async -> Void) {
        let id = UUID()
        work[id] = Task {
            await operation()
            self.work[id] = nil
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
