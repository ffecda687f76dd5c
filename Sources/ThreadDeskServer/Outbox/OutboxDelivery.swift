import Deadlines
import DiscordREST
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// Delivers the messages the outbox accepted into their users' threads, in a task of its own:
/// users side by side (at most `OutboxSettings.concurrency` at once), one user's messages in the
/// order they were accepted, under the user's lock and the queue's hold (`claimOutbox`), so any
/// replica delivers any user's queue and each message is posted once (Discord's `nonce` with
/// `enforce_nonce`, and the thread's adoption record, cover an answer lost on the way back).
/// A delivery that fails for a passing reason (Discord down, a 429, the store) waits with backoff
/// and holds up the user's later messages; one Discord refuses for good becomes `failed` and the
/// next goes on.
final class OutboxDelivery: Service, Sendable, CustomStringConvertible {
    let store: any UserStore
    let users: UserSerializer
    let threads: ThreadService
    let ingestion: MirrorIngestion
    /// The away message, for a user who wrote while support is away.
    let away: SupportAvailability?
    /// The curated answers, to name the one the user saw before writing; nil without a FAQ forum.
    let faq: FAQShelf
    let settings: OutboxSettings
    /// Ids for a placeholder thread, when the user's thread is gone and no new one may be made yet.
    let ids: MessageIDs
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime
    /// The debug watchdog's tracker (`DEBUG_WAIT_SECONDS`): a slow Discord call of a delivery is
    /// named as done for the outbox.
    let waits: WaitTracker?
    /// Each delivery continues the trace of the send that accepted the message.
    let traces: Traces
    /// This process, as the holder of the queues it delivers.
    let holder = "replica-" + UUID().uuidString
    /// How long the loop sleeps at most before it looks for due queues again (another replica may
    /// have accepted messages, or died holding some).
    let idlePoll: Duration = .seconds(5)
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork
    static let workName = "outbox"

    var description: String { "OutboxDelivery" }

    init(
        store: any UserStore, users: UserSerializer, threads: ThreadService, ingestion: MirrorIngestion, away: SupportAvailability?,
        faq: FAQShelf, settings: OutboxSettings, ids: MessageIDs, metrics: ServerMetrics, logger: Logger, time: ServerTime,
        waits: WaitTracker? = nil, traces: Traces = .off, work: BackgroundWork = .untracked
    ) {
        self.waits = waits
        self.traces = traces
        (self.store, self.users, self.threads, self.ingestion, self.away, self.faq, self.ids) = (store, users, threads, ingestion, away, faq, ids)
        (self.settings, self.metrics, self.logger, self.time, self.work) = (settings, metrics, logger, time, work)
        // Queues due that no task has taken up yet (the clock moved past a backoff).
        work.watch(Self.workName) { [weak self] in
            guard let self, let owners = try? await self.store.outboxOwnersDue(at: self.time.now(), limit: 1), !owners.isEmpty else {
                return false
            }
            self.wake()
            return true
        }
    }

    /// A message was accepted (or changed while it waits).
    func wake() {
        woken.withLock { woken in
            if !woken { work.raise(Self.workName) }
            woken = true
        }
        wakeUps.signal()
    }

    /// Whether a wake-up came that no look for due queues has answered yet.
    private let woken = Mutex(false)
    private let stopping = Mutex(false)
    private let inFlight = Mutex<Set<UserID>>([])
    /// When a failing delivery was last logged: a stuck outbox is logged once a minute, not per message.
    private let lastFailureLog = Mutex<Date?>(nil)
    /// Whether Discord failed the last delivery of this process: the next one it takes means
    /// Discord is back, and every queue waiting out a backoff is tried at once.
    private let discordFailing = Mutex(false)

    /// Looks for due queues whenever woken (or every `idlePoll`) and starts a task for each user
    /// who has one and none running. At shutdown the deliveries under way end after their current
    /// message, or are cancelled after `OutboxSettings.drain` of real time (a Discord call that
    /// waits out its own retries, on whatever clock the server runs); what is left waits in the
    /// store for the next start or another replica.
    func run() async throws {
        // One process serves a store without a bus (SQLite): the holds left in it are those of the
        // process before this one (killed mid-delivery), whose queues are this one's now, not
        // after their holds run out. Replicas over PostgreSQL wait for a dead one's holds to pass.
        if store.bus == nil {
            do {
                try await store.releaseOutboxHolds(except: holder)
            } catch {
                logFailure("Could not release the outbox holds left by the last run", error: error)
            }
        }
        await withGracefulShutdownHandler {
            // A cancelled wait returns at once: cancellation ends the loop too, or it would spin.
            while !stopping.withLock({ $0 }), !Task.isCancelled {
                let answering = woken.withLock { woken in
                    defer { woken = false }
                    return woken
                }
                let started = await due()
                work.begin(Self.workName, count: started.count)
                for owner in started {
                    let id = UUID()
                    let task = Task {
                        await WaitTracker.$current.withValue(self.waits) {
                            await WaitTracker.run(job: "outbox delivery") { await self.deliverQueue(of: owner) }
                        }
                        _ = self.inFlight.withLock { $0.remove(owner) }
                        _ = self.running.withLock { $0.removeValue(forKey: id) }
                        self.wake()
                        self.work.end(Self.workName)
                    }
                    running.withLock { $0[id] = task }
                }
                // The gauge is written before the wake-up counts as answered: what settles on the
                // outbox's work reads the depth this pass saw.
                await reportDepth()
                if answering { woken.withLock { if !$0 { work.lower(Self.workName) } } }
                await sleepUntilWoken(atLeast: started.isEmpty ? .milliseconds(250) : .milliseconds(10))
            }
            await drain()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.wake()
        }
    }

    /// The deliveries under way, by a key of their own.
    private let running = Mutex<[UUID: Task<Void, Never>]>([:])

    /// Waits for the deliveries under way, and cancels those still running after `OutboxSettings.drain`.
    private func drain() async {
        let tasks = running.withLock { Array($0.values) }
        guard !tasks.isEmpty else { return }
        let drained = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for task in tasks { await task.value }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: self.settings.drain, clock: .continuous)
                return false
            }
            let first = await group.next() ?? true
            // Past the drain: the deliveries are cancelled, which ends the wait for them too.
            if !first { for task in tasks { task.cancel() } }
            group.cancelAll()
            return first
        }
        if !drained {
            logger.warning("Deliveries still under way at shutdown were cancelled; their messages wait in the store", metadata: ["count": "\(tasks.count)"])
        }
    }

    /// Users with a queue due and no delivery of theirs under way, at most `concurrency` busy.
    private func due() async -> [UserID] {
        let owners: [UserID]
        do {
            owners = try await store.outboxOwnersDue(at: time.now(), limit: 1000)
        } catch {
            logFailure("Could not read the outbox", error: error)
            return []
        }
        return inFlight.withLock { busy in
            var started: [UserID] = []
            for owner in owners where !busy.contains(owner) && busy.count < max(1, settings.concurrency) {
                busy.insert(owner)
                started.append(owner)
            }
            return started
        }
    }

    /// Until woken, the next queue is due, or `idlePoll` passed (a moment on the clock, read
    /// before the store: a clock that moves meanwhile makes the wake-up earlier, never later).
    private func sleepUntilWoken(atLeast minimum: Duration) async {
        let start = time.elapsed()
        var wait = idlePoll
        if let next = try? await store.nextOutboxDue() {
            wait = max(minimum, min(wait, .milliseconds(Int64(max(0, next.timeIntervalSince(time.now())) * 1000))))
        }
        await time.wait(for: wakeUps, untilElapsed: start + wait)
    }

    /// The outbox's depth and its oldest message's wait, for `/metrics`.
    private func reportDepth() async {
        guard let usage = try? await store.outboxUsage(of: nil) else { return }
        metrics.outboxDepth.set(to: Double(usage.count))
        metrics.outboxOldest.set(to: usage.oldest.map { max(0, time.now().timeIntervalSince($0)) } ?? 0)
    }

    /// Delivers `owner`'s due messages in order, while this process holds their queue.
    private func deliverQueue(of owner: UserID) async {
        do {
            guard try await claim(owner) else { return }
            for item in try await store.outbox(of: owner) where item.isQueued {
                // Compared as the store compares them (seconds since 1970): a date read back from the
                // store may differ from the clock's in its last bit, and the store called it due.
                if stopping.withLock({ $0 }) || item.nextAttempt.timeIntervalSince1970 > time.now().timeIntervalSince1970 { break }
                guard try await claim(owner) else { return }
                let outcome = try await traces.span(
                    "outbox.deliver", kind: .producer, parent: traces.context(traceparent: item.traceparent),
                    attributes: traces.isOn ? ["threaddesk.attempt": .int64(Int64(item.attempts + 1))] : [:]
                ) { _ in try await deliver(item.id, of: owner) }
                if case .later = outcome { break }
            }
            try await store.releaseOutbox(of: owner, holder: holder)
        } catch {
            // The store (or the user's lock) failed us: the queue's next attempt waits its backoff
            // too, so a failure that repeats costs one try per backoff, not a loop.
            logFailure("Could not deliver a user's outbox; it is tried again", error: error, owner: owner)
            if var first = try? await store.outbox(of: owner).first(where: \.isQueued) {
                first.attempts += 1
                first.nextAttempt = time.now().addingTimeInterval(backoff(after: first.attempts) / .seconds(1))
                _ = try? await store.updateOutboxItem(first, fence: OutboxFence(holder: holder, now: time.now()))
            }
            try? await store.releaseOutbox(of: owner, holder: holder)
        }
    }

    /// The posts `ids` of `item` an earlier attempt made, as Discord has them now, from the thread
    /// the message's first post is in (`thread` when the mirror does not say); those deleted in
    /// Discord since are left out, and whether the first was.
    private func earlierPosts(_ ids: [Snowflake], of item: OutboxItem, thread: String?) async throws -> (posts: [DiscordMessage], firstGone: Bool) {
        let thread = try await store.mirroredMessages([item.id]).first?.threadID.description ?? thread ?? ""
        var posts: [DiscordMessage] = []
        var firstGone = false
        for (index, id) in ids.enumerated() {
            do {
                posts.append(try await threads.discord.message(id.description, in: thread))
            } catch {
                guard error.apiError?.status == 404 else { throw error }
                if index == 0 { firstGone = true }
            }
        }
        return (posts, firstGone)
    }

    /// Discord took a message after failing: the queues waiting out the backoffs its outage built
    /// up (up to `retryCap`) are due now, every replica's (they read the store).
    private func discordIsBack() async {
        do {
            let sooner = try await store.retryWaitingOutbox(at: time.now())
            if sooner > 0 { logger.notice("Discord takes messages again; those waiting are delivered now", metadata: ["waiting": "\(sooner)"]) }
            wake()
        } catch {
            logFailure("Could not make the waiting messages due", error: error)
        }
    }

    /// How long a message of an app this replica does not serve waits before it is looked at again.
    static let appNotServedRetry: Duration = .seconds(600)

    /// The wait before the next attempt after `attempts` failed ones: doubling from `retryBase` up to `retryCap`.
    private func backoff(after attempts: Int) -> Duration {
        min(settings.retryCap, settings.retryBase * Double(1 << min(max(attempts - 1, 0), 20)))
    }

    /// Takes (or keeps) `owner`'s queue for `OutboxSettings.hold`.
    private func claim(_ owner: UserID) async throws -> Bool {
        let now = time.now()
        return try await store.claimOutbox(of: owner, holder: holder, until: now.addingTimeInterval(settings.hold / .seconds(1)), now: now)
    }

    enum Outcome {
        /// In Discord, every part of it; or nothing left to do (deleted or delivered meanwhile).
        case delivered
        /// Refused for good: failed, and the next message goes on.
        case refused
        /// Not now: it and the user's later messages wait for their next attempt.
        case later
    }

    /// One message: read under the user's lock; posted outside it (a slow Discord holds up no
    /// send, read or edit of the user's: edits and deletes of queued messages wait for the queue's
    /// hold instead); then, under the lock again, what the posts changed is kept and the message
    /// leaves the outbox (an edit or delete after that goes to Discord, never to the outbox).
    private func deliver(_ id: Snowflake, of owner: UserID) async throws -> Outcome {
        let found = try await users.withUser(owner) { context -> (UserRecord, OutboxItem)? in
            guard let record = context.record, let item = try await store.outboxItem(id), item.isQueued, item.owner == owner else { return nil }
            return (record, item)
        }
        guard case (let record, var item)? = found else { return .delivered }
        let fence = OutboxFence(holder: holder, now: time.now())
        let parts = OutboxNonce.posts(of: item)
        // The posts' own view of the user: the thread they make, the notes a new thread gets.
        var posting = UserContext(id: owner, record: record, keptResult: nil)
        var posted: [DiscordMessage] = []
        // The notes a new thread got, taken into the mirror with the posts, under the user's lock.
        var notes: [DiscordMessage] = []
        var firstGone = false
        do {
            for index in item.postedParts.count..<parts.count {
                // The hold lasts one post: renewed before each, so a replica that dies frees its queues soon.
                if index > 0 || !posted.isEmpty { guard try await claim(owner) else { throw OutboxHoldLost() } }
                let message = try await traces.span("discord.post-message", kind: .client, attributes: traces.isOn ? ["threaddesk.part": .int64(Int64(index))] : [:]) { _ in
                    try await threads.post(parts[index], in: &posting, from: nil, mayStartThread: item.mayStartThread, notes: &notes)
                }
                guard let discordID = Snowflake(message.id) else { throw DiscordError.invalidResponse("a message id that is no snowflake") }
                if index == 0, item.kind == .message { try await store.saveMirrorAlias(discordID: discordID, messageID: item.id, owner: owner) }
                item.postedParts.append(discordID)
                posted.append(message)
                if index + 1 < parts.count { try await store.updateOutboxItem(item, fence: fence) }
            }
            // Finished after an attempt that stopped part-way (a passing failure, or a retry of a
            // message Discord refused part-way): the posts the earlier attempts made, as Discord
            // has them, join these, so the mirror takes in the whole message as after a delivery
            // in one go. A post deleted in Discord since is left out (its first: the message is
            // deleted, as any message of the user's deleted in Discord).
            let earlier = Array(item.postedParts.dropLast(posted.count))
            if !earlier.isEmpty {
                let found = try await earlierPosts(earlier, of: item, thread: posting.record?.threadID)
                posted = found.posts + posted
                firstGone = found.firstGone
            }
        } catch {
            // What was posted before the failure is kept (the next attempt goes on after it).
            if !posted.isEmpty { try await keep(posted, notes: notes, of: item, from: posting, removing: false, fence: fence) }
            // The thread is gone (or locked) and no new one was made: the user's messages wait in a
            // placeholder again, where the user sees them, until a send may make the new thread.
            if posted.isEmpty, record.threadID != nil, error is DeviceCheckFailure { try await leaveLostThread(item) }
            if error is ThreadService.AppNotServed {
                // Not this replica's app (any more, or not yet: a replica whose apps file is older
                // than another's, during a rolling restart): the message waits, untouched, for a
                // replica that serves its app, or for `admin app delete`.
                item.nextAttempt = time.now().addingTimeInterval(Self.appNotServedRetry / .seconds(1))
                try await store.updateOutboxItem(item, fence: fence)
                logger.notice("A message of an app this replica does not serve waits", metadata: ["app": "\(owner.app)"])
                return .later
            }
            if let refusal = Self.refusal(error) {
                try await refuse(item, refusal, fence: fence, owner: owner)
                return .refused
            }
            if case .rateLimited(let wait)? = error as? DiscordError {
                // Discord's pace (a bucket's turn further off than the call's budget): the message
                // is tried when the turn comes, and no failure counts toward its backoff.
                item.nextAttempt = time.now().addingTimeInterval(wait / .seconds(1))
            } else {
                item.attempts += 1
                item.nextAttempt = time.now().addingTimeInterval(backoff(after: item.attempts) / .seconds(1))
            }
            try await store.updateOutboxItem(item, fence: fence)
            // Discord down (no answer, or a 5xx; not a 4xx about this message, nor its pace): its
            // return makes every waiting queue due.
            if let failure = error as? DiscordError, Self.meansDiscordIsDown(failure) {
                discordFailing.withLock { $0 = true }
            }
            metrics.outboxFailure(code: "passing", app: owner.app)
            logFailure("Discord did not take a message; it waits in the outbox", error: error, owner: owner)
            return .later
        }
        try await keep(posted, notes: notes, of: item, from: posting, removing: true, fence: fence, firstGone: firstGone)
        if discordFailing.withLock({ failing in defer { failing = false }; return failing }) { await discordIsBack() }
        if item.kind == .message {
            metrics.posted(app: owner.app)
            if !item.files.isEmpty { metrics.filesUploaded.increment(by: Int64(item.files.count)) }
        }
        return .delivered
    }

    /// Under the user's lock: the thread the posts made (or adopted) and its notes into the
    /// record, the placeholder's messages into the thread, the posts into the mirror, and the
    /// message out of the outbox once all of it is posted; then the note of the suggestion seen
    /// and the away message, as after any message of the user's.
    private func keep(
        _ posted: [DiscordMessage], notes: [DiscordMessage], of item: OutboxItem, from posting: UserContext, removing: Bool, fence: OutboxFence,
        firstGone: Bool = false
    ) async throws {
        try await users.withUser(item.owner) { context in
            guard var record = context.record, let after = posting.record else { return }
            if after.threadID != nil, after.threadID != record.threadID {
                (record.threadID, record.installation, record.pendingInstallation) = (after.threadID, after.installation, after.pendingInstallation)
                record.updatedAt = time.now()
            }
            context.record = record
            try await adoptPlaceholder(&context)
            let bot = try await ingestion.bot.id()
            let split = OutboxNonce.isSplit(item)
            // Part-way (`removing` false), the mirror waits for the whole message (`apply`).
            for message in posted {
                guard let thread = Snowflake(message.channelId), let current = context.record else { continue }
                try await ingestion.apply(
                    ingestion.facts([message], bot: bot, owner: current.id, partOf: split ? item.id : nil), thread: thread, record: current,
                    delivering: removing ? item.id : nil)
            }
            for note in notes {
                guard let thread = Snowflake(note.channelId), let current = context.record else { continue }
                try await ingestion.apply(ingestion.facts([note], bot: bot, owner: current.id), thread: thread, record: current)
            }
            if removing, firstGone, let current = context.record, let row = try await store.mirroredMessages([item.id]).first {
                try await ingestion.apply([.deleted(item.id, thread: row.threadID)], thread: row.threadID, record: current)
            }
            guard removing else { return }
            try await store.removeOutboxItem(item.id, fence: fence)
            // A diagnostics report is a note: no answer of the agent's follows it.
            guard item.kind == .message else { return }
            if let suggestion = item.suggestionID { await noteSuggestion(suggestion, item: item, in: context) }
            await away?.answer(&context)
        }
    }

    /// The user's thread is gone: the record forgets it and `item`'s message moves into a
    /// placeholder thread (the user's next thread takes it over).
    private func leaveLostThread(_ item: OutboxItem) async throws {
        try await users.withUser(item.owner) { context in
            guard var record = context.record, record.threadID != nil else { return }
            record.threadID = nil
            let placeholder: Snowflake
            if let pending = record.pendingThread.flatMap({ Snowflake($0) }) {
                placeholder = pending
            } else {
                placeholder = ids.next(at: time.now())
                try await store.saveMirrorThread(MirrorThread(id: placeholder, owner: record.id, complete: true, lastActivity: time.now()))
                record.pendingThread = placeholder.description
            }
            record.updatedAt = time.now()
            context.record = record
            if var row = try await store.mirroredMessages([item.id]).first {
                row.threadID = placeholder
                try await store.saveMirroredMessages([row])
            }
        }
    }

    /// A user whose first message made their thread: the placeholder's messages move into it.
    private func adoptPlaceholder(_ context: inout UserContext) async throws {
        guard let pending = context.record?.pendingThread, let thread = context.record?.threadID.flatMap({ Snowflake($0) }) else { return }
        if let placeholder = Snowflake(pending) { try await store.moveMirroredMessages(from: placeholder, to: thread) }
        context.record?.pendingThread = nil
    }

    /// Discord refused `item` for good: it stays in the outbox, failed (the user edits it to send
    /// it again, or deletes it), and the user sees why.
    private func refuse(_ item: OutboxItem, _ refusal: DeliveryFailure, fence: OutboxFence, owner: UserID) async throws {
        var item = item
        item.failure = refusal
        metrics.outboxFailure(code: refusal.code, app: owner.app)
        logger.warning(
            "Discord refused a message for good; it is marked failed",
            metadata: ["user": "\(owner.logValue)", "code": "\(refusal.code)", "reason": "\(refusal.message)"])
        // A diagnostics report the user never sees: nothing to retry or delete, so it goes.
        if item.kind == .diagnostics {
            try await store.removeOutboxItem(item.id, fence: fence)
            return
        }
        // Under the user's lock, as every change of the user's rows (an edit of it waits for this).
        try await users.withUser(owner) { _ in
            guard try await store.updateOutboxItem(item, fence: fence), var row = try await store.mirroredMessages([item.id]).first else { return }
            row.delivery = .failed
            row.deliveryError = refusal
            try await ingestion.saveOutboxChange(row, owner: owner)
        }
    }

    /// Whether a failed call says Discord is down (it answered nothing usable, or a 5xx), as
    /// opposed to its pace (a 429 or a turn too far off) or its word on one message (a 4xx).
    static func meansDiscordIsDown(_ error: DiscordError) -> Bool {
        switch error {
        case .unavailable, .invalidResponse: true
        case .api(let answer): answer.status >= 500
        case .rateLimited: false
        }
    }

    /// Discord's refusal of a message for good (a 4xx that a retry would get again); nil for
    /// what passes (5xx, 429, timeouts, the store, a forum that needs a tag).
    static func refusal(_ error: any Error) -> DeliveryFailure? {
        // Its thread is gone and the send was not asserted: a new thread needs a signed request.
        if case .assertionRequired? = error as? DeviceCheckFailure {
            return DeliveryFailure(code: "assertion_required", message: "The thread is gone; a new one needs the device's assertion: send the message again.")
        }
        guard let api = (error as? DiscordError)?.apiError, [400, 413].contains(api.status) else { return nil }
        return DeliveryFailure(code: String(api.code.rawValue), message: api.message)
    }

    /// A `:ninja:` note after the user's message naming the curated answer they saw before writing
    /// it, so the agent does not send it again. Posted once (nonce); a failure costs only the note.
    private func noteSuggestion(_ id: String, item: OutboxItem, in context: UserContext) async {
        guard let answer = await faq.book(for: context.id.app)?.answer(id), let record = context.record, let thread = record.threadID else { return }
        do {
            let posted = try await threads.discord.createMessage(
                in: thread, .init(content: SuggestionNote.text(for: answer), nonce: ThreadNotes.nonce("suggestion", id: context.id, item.idempotencyKey, answer.id)))
            try? await ingestion.ingestOwn(posted, record: record)
        } catch {
            logger.warning("Could not post the note of the suggestion the user saw", metadata: ["error": "\(error)"])
        }
    }

    /// Logs a failure at most once a minute (a Discord outage fails every delivery).
    private func logFailure(_ message: Logger.Message, error: any Error, owner: UserID? = nil) {
        let now = time.now()
        let due = lastFailureLog.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        var metadata: Logger.Metadata = ["error": "\(error)"]
        if let owner { metadata["user"] = "\(owner.logValue)" }
        logger.warning(message, metadata: metadata)
    }
}

/// Another holder took the user's queue while a delivery was under way (its hold ran out): the
/// delivery stops; the other goes on from what the store says, the nonce answering any post again.
struct OutboxHoldLost: Error, CustomStringConvertible {
    var description: String { "the outbox queue's hold ran out during a delivery" }
}

/// The nonce of an outbox message's post: the message's own id and the part's place (`o<id>-<part>`,
/// within Discord's 25 characters). Discord answers a repeated nonce with the post it has
/// (`enforce_nonce`); the gateway's event of the post carries it, so ingestion knows the post
/// as the accepted message even before the outbox noted Discord's id of it.
enum OutboxNonce {
    static func make(_ id: Snowflake, part: Int) -> String { "o\(id)-\(part)" }

    /// The accepted message and the part a nonce names, if it is an outbox post's.
    static func parse(_ nonce: String) -> (id: Snowflake, part: Int)? {
        guard nonce.hasPrefix("o"), let dash = nonce.lastIndex(of: "-"),
            let id = Snowflake(String(nonce[nonce.index(after: nonce.startIndex)..<dash])),
            let part = Int(nonce[nonce.index(after: dash)...]), part >= 0
        else { return nil }
        return (id, part)
    }

    /// Whether the item's text takes several posts (a user's long message: one message in the
    /// mirror, in parts).
    static func isSplit(_ item: OutboxItem) -> Bool {
        item.kind == .message && !(item.content.isEmpty && !item.files.isEmpty) && NoteMarkers.posts(ofUserText: item.content).count > 1
    }

    /// The posts that deliver `item`, in order: a message's text in Discord-sized parts (its files
    /// with the first); a diagnostics report's file in a note, then its summary in another (their
    /// nonces the ones diagnostics always had: the notes are not the user's messages).
    static func posts(of item: OutboxItem) -> [DiscordMessageCreate] {
        let files = item.files.map { DiscordFile(filename: $0.filename, contentType: $0.contentType ?? "application/octet-stream", data: $0.bytes) }
        switch item.kind {
        case .message:
            let parts = item.content.isEmpty && !item.files.isEmpty ? [""] : NoteMarkers.posts(ofUserText: item.content)
            return parts.enumerated().map { index, text in .init(content: text, nonce: make(item.id, part: index), files: index == 0 ? files : []) }
        case .diagnostics:
            return [
                .init(
                    content: ":ninja: 📎 \(item.files.first?.filename ?? "diagnostics.json")",
                    nonce: ThreadNotes.nonce("diagnostics", id: item.owner, item.idempotencyKey), files: files),
                .init(content: item.content, nonce: ThreadNotes.nonce("summary", id: item.owner, item.idempotencyKey)),
            ]
        }
    }
}
