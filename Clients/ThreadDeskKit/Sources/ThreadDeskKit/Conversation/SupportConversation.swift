import Foundation
import Observation

/// The support chat's state, for a screen to bind to (SwiftUI, or UIKit through
/// `withObservationTracking`): the messages with their delivery, support typing, the unread
/// count, whether support is in, suggestions for the draft, a rating support asks for, and the
/// connection.
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

    // MARK: State

    /// The messages, oldest first: the server's, then the ones still on the device.
    public var messages: [ConversationMessage] { history.timeline.messages }
    /// The messages with their order kept by id (what ``messages`` reads).
    public var timeline: ConversationTimeline { history.timeline }
    /// Support is typing; ends when the server's moment passes or support's message comes.
    public var isSupportTyping: Bool { typing.isSupportTyping }
    /// Support messages the user has not read (what the app's badge shows).
    public var unreadCount: Int { history.unreadCount }
    /// The newest message the user has read (on any of their devices).
    public var lastReadMessageID: String? { history.lastReadMessageID }
    /// Whether support is in; nil until known.
    public var supportStatus: SupportStatus? { status.current }
    /// The closed conversation support asks the user to rate (``rate(score:comment:)``); nil when
    /// none waits, and again once rated.
    public var ratingRequest: RatingRequest? { rating.request }
    /// A rating is on its way to the server.
    public var isRating: Bool { rating.isSending }
    /// Curated answers matching the draft, best first.
    public var suggestions: [Suggestion] { suggesting.suggestions }
    public var connection: Connection { live.connection }
    /// Older messages exist on the server than the first one here.
    public var hasEarlier: Bool { history.hasEarlier }
    public var isLoadingEarlier: Bool { history.isLoadingEarlier }
    /// Catching up with the server (after the stream came back, or at launch).
    public var isSynchronizing: Bool { live.isSynchronizing }
    /// The last failure of something the user did (sending aside: a message shows its own).
    public var lastError: ThreadDeskError? { work.lastError }
    /// The text being written. Setting it reports typing to support (throttled) and asks for
    /// suggestions once the user pauses.
    public var draft = "" {
        didSet { if draft != oldValue { draftChanged() } }
    }
    /// Files to go with the next ``send()``.
    public var draftFiles: [OutgoingFile] = []

    @ObservationIgnored public let client: ThreadDeskClient
    @ObservationIgnored public let options: Options
    // The parts, each with one job; `live` drives the others as events come. (Pushes, in
    // SupportConversation+Pushes.swift, reach the history, the connection and the device store.)
    @ObservationIgnored let history: ConversationHistory
    @ObservationIgnored private let sending: ConversationSending
    @ObservationIgnored let live: ConversationLive
    @ObservationIgnored private let typing: ConversationTyping
    @ObservationIgnored private let suggesting: ConversationSuggestions
    @ObservationIgnored private let status: ConversationSupportStatus
    @ObservationIgnored private let rating: ConversationRating
    @ObservationIgnored let deviceStore: ConversationDeviceStore
    @ObservationIgnored private let work = ConversationWork()
    @ObservationIgnored private var runTask: Task<Void, Never>?
    @ObservationIgnored private var runGeneration = 0

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
        self.options = options
        let start = clock.now
        let elapsed: @Sendable () -> Duration = { start.duration(to: clock.now) }
        let sleep: @Sendable (Duration) async throws -> Void = { try await clock.sleep(for: $0) }
        deviceStore = ConversationDeviceStore(store: store, saveDelay: options.saveDelay, sleep: sleep)
        rating = ConversationRating(client: client)
        history = ConversationHistory(client: client, pageSize: options.pageSize, deviceStore: deviceStore, work: work, rating: rating)
        sending = ConversationSending(client: client, history: history, work: work, sleep: sleep)
        typing = ConversationTyping(client: client, interval: options.typingInterval, sleep: sleep, elapsed: elapsed, work: work)
        suggesting = ConversationSuggestions(client: client, delay: options.suggestionDelay, sleep: sleep)
        status = ConversationSupportStatus(client: client, sleep: sleep)
        live = ConversationLive(
            client: client, options: options, sleep: sleep, history: history, sending: sending, typing: typing, status: status,
            rating: rating, work: work)
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
        suggesting.cancel()
        typing.cancelExpiry()
        status.cancel()
        deviceStore.cancelScheduledSave()
        let pending = work.cancelAll()
        await running?.value
        for task in pending { await task.value }
        deviceStore.endCancelledSave()
        typing.stopped()
        live.stopped()
        await history.saveNow()
    }

    /// Runs the conversation until the calling task is cancelled: the device's history and
    /// unsent messages at once, then the session, the stream, and sync whenever it comes back.
    public func run() async {
        // What the device holds, shown in one step: the kept conversation and the unsent messages.
        let kept = await client.keptUserID()
        let keptSnapshot = kept == nil || kept == history.userID ? nil : await deviceStore.load(for: kept!)
        let entries = (try? await client.pendingMessages()) ?? []
        if let kept, kept != history.userID { adopt(userID: kept, keptSnapshot, entries: entries) } else { sending.show(entries) }
        guard let session = await live.openSession() else { return }
        if session.userId != history.userID {
            let snapshot = await deviceStore.load(for: session.userId)
            let entries = (try? await client.pendingMessages()) ?? []
            adopt(userID: session.userId, snapshot, entries: entries)
        }
        if Task.isCancelled { return }
        await live.follow()
        await history.saveNow()
    }

    /// The session's user, with what the device kept of their conversation and the outbox's
    /// messages: nothing of a user before (their state, their messages) stays.
    func adopt(userID: String, _ snapshot: ConversationSnapshot?, entries: [OutboxEntry]) {
        if history.userID != nil {
            work.cancelAll()
            history.forget()
            sending.forget()
            status.forget()
            rating.forget()
            suggesting.forget()
            live.forget()
        }
        history.adopt(userID: userID, snapshot)
        sending.show(entries)
    }

    // MARK: Events

    /// Applies one live update (what ``run()`` does with each; public for apps that run the
    /// client's ``ThreadDeskClient/updates(resumingAfter:)`` themselves).
    public func apply(_ update: LiveUpdate) {
        live.apply(update)
    }

    // MARK: Actions

    /// Sends the draft (and ``draftFiles``): shown at once as pending, then queued and sent as
    /// the server and support get it. A suggestion the user opened (``opened(_:)``), or else
    /// the one shown first, is named to support with a text-only message (an article the user
    /// came from, ``stillNeedHelp(article:)``, before either).
    public func send() {
        let text = draft.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty || !draftFiles.isEmpty else { return }
        let suggestion = draftFiles.isEmpty ? suggesting.named : nil
        if draftFiles.isEmpty { suggesting.sent() }
        let entry = OutboxEntry(text: text, files: draftFiles, suggestionID: suggestion)
        draftFiles = []
        draft = ""
        sending.send(entry)
    }

    /// The user opened a suggestion: the next message names it to support.
    public func opened(_ suggestion: Suggestion) {
        suggesting.opened(suggestion)
    }

    /// The user read `article` in the help center and still needs help: the next text message
    /// names it to support (`suggestionId`), so the agent knows which answer they read first.
    /// `HelpCenterView` calls it from its "Still need help?" button.
    public func stillNeedHelp(article: Article) {
        suggesting.cameFrom(article)
    }

    /// Sends a failed message again (or a pending one now).
    public func retry(_ message: ConversationMessage) {
        sending.retry(message)
    }

    /// Changes the text of one of the user's messages (a failed one goes out again with it).
    public func edit(_ message: ConversationMessage, to text: String) {
        sending.edit(message, to: text)
    }

    /// Deletes one of the user's messages; one not yet sent never reaches support.
    public func delete(_ message: ConversationMessage) {
        sending.delete(message)
    }

    /// The user has seen the conversation up to `messageID` (by default its newest message):
    /// the unread count, the badge and support's read receipt follow.
    public func markRead(upTo messageID: String? = nil) {
        history.markRead(upTo: messageID)
    }

    /// Rates the conversation of ``ratingRequest``: `score` 1 (poor) to 5 (excellent), and an
    /// optional `comment` of at most 500 characters. Either out of range throws at once (kind
    /// ``ThreadDeskError/Kind-swift.struct/invalidInput``, code `ErrorCode.invalidRating`),
    /// sending nothing. Every attempt at one request goes under the same idempotency key, so
    /// trying again after a failure never rates twice; ``ratingRequest`` is cleared once the
    /// server has the rating, or says the conversation was rated already.
    public func rate(score: Int, comment: String? = nil) async throws(ThreadDeskError) {
        try await rating.rate(score: score, comment: comment)
    }

    /// Fetches the page before the oldest message held (the user scrolled to the top).
    public func loadEarlier() async {
        await history.loadEarlier()
    }

    /// The bytes of a file of a message (images to show, documents to open).
    public func data(for file: ConversationMessage.File) async throws(ThreadDeskError) -> Data {
        guard let url = file.url else { throw .invalidResponse("\(file.filename) is not on the server yet") }
        return try await client.data(at: url)
    }

    /// The draft changed: typing is reported (throttled) and suggestions asked for once the user
    /// pauses; a blank draft has none.
    private func draftChanged() {
        guard !draft.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return suggesting.clear() }
        typing.userTyped()
        suggesting.ask(for: draft)
    }
}
