import APNs
import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// Sends the pushes the ingestion left pending, in a task of its own: users side by side (at
/// most `PushSettings.concurrency` at once), one user's pushes one after the other under their
/// lock, so that on several replicas each push goes out once. A push that fails for a passing
/// reason stays pending for its message and is tried again with backoff, until it is older than
/// `PushSettings.maxAge`; another user's success never skips it.
final class PushDispatcher: Service, Sendable, CustomStringConvertible {
    let store: any UserRecords & MirrorStore & PushQueue
    let apns: PushSender
    /// Each app's topic.
    let catalog: AppCatalog
    let settings: PushSettings
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime
    var now: @Sendable () -> Date { time.now }
    /// How long the loop sleeps at most before it looks for due pushes again (another replica may
    /// have left some).
    let idlePoll: Duration = .seconds(5)
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork
    static let workName = "pushes"
    let traces: Traces
    /// The trace of each user's latest reply waiting for its push, taken by the push (bounded: a
    /// push whose trace was pushed out is sent all the same, in a trace of its own).
    private let replyTraces = Mutex<[UserID: TraceContext]>([:])

    var description: String { "PushDispatcher" }

    init(
        store: any UserStore, apns: PushSender, settings: PushSettings, catalog: AppCatalog, metrics: ServerMetrics, logger: Logger,
        time: ServerTime, traces: Traces = .off, work: BackgroundWork = .untracked
    ) {
        self.work = work
        self.traces = traces
        self.catalog = catalog
        self.store = store
        self.apns = apns
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.time = time
        // Pushes due that no task has taken up yet (the clock moved past their next attempt).
        work.watch(Self.workName) { [weak self] in
            guard let self, let next = try? await self.store.nextPushDue(), next <= self.now() else { return false }
            self.wake()
            return true
        }
    }

    /// Something became pending.
    func wake() {
        woken.withLock { woken in
            if !woken { work.raise(Self.workName) }
            woken = true
        }
        wakeUps.signal()
    }

    /// Whether a wake-up came that no look for due pushes has answered yet.
    private let woken = Mutex(false)

    /// Looks for due pushes whenever woken (or every `idlePoll`) and starts a task for each user
    /// who has some and none running, so a user whose pushes wait (for their lock, or for APNs)
    /// holds up no one else. At shutdown the pushes under way finish within their deadline.
    /// Throws nothing: a push that fails stays pending, or is dropped past `PushSettings.maxAge`.
    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                // A cancelled wait returns at once: cancellation ends the loop too, or it would spin.
                while !stopping.withLock({ $0 }), !Task.isCancelled {
                    // Taken before the look: a wake-up that comes during it raises the flag again.
                    let answering = woken.withLock { woken in
                        defer { woken = false }
                        return woken
                    }
                    let started = await due()
                    work.begin(Self.workName, count: started.count)
                    if answering { woken.withLock { if !$0 { work.lower(Self.workName) } } }
                    for (user, pushes) in started {
                        group.addTask {
                            await self.deliver(pushes, to: user)
                            _ = self.inFlight.withLock { $0.remove(user) }
                            self.wake()
                            self.work.end(Self.workName)
                        }
                    }
                    // Pushes due but not started belong to busy users: their tasks wake the loop.
                    await sleepUntilWoken(atLeast: started.isEmpty ? .milliseconds(250) : .milliseconds(10))
                }
            }
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.wake()
        }
    }

    private let stopping = Mutex(false)
    private let inFlight = Mutex<Set<UserID>>([])

    /// Due pushes by user, for users with nothing under way, at most `concurrency` users busy.
    private func due() async -> [(UserID, [DuePush])] {
        let due: [DuePush]
        do {
            due = try await store.duePushes(at: now(), limit: 1000)
        } catch {
            logger.warning("Could not read the pending pushes", metadata: ["error": "\(error)"])
            return []
        }
        var order: [UserID] = []
        var byUser: [UserID: [DuePush]] = [:]
        for push in due {
            if byUser[push.owner] == nil { order.append(push.owner) }
            byUser[push.owner, default: []].append(push)
        }
        return inFlight.withLock { busy in
            var started: [(UserID, [DuePush])] = []
            for user in order where !busy.contains(user) && busy.count < max(1, settings.concurrency) {
                busy.insert(user)
                started.append((user, byUser[user] ?? []))
            }
            return started
        }
    }

    /// Until woken, the next push is due, or `idlePoll` passed: a moment on the clock, read before
    /// the store (a clock that moves meanwhile makes the wake-up earlier, never later than due).
    private func sleepUntilWoken(atLeast minimum: Duration) async {
        let start = time.elapsed()
        var wait = idlePoll
        if let next = try? await store.nextPushDue() {
            wait = max(minimum, min(wait, .milliseconds(Int64(next.timeIntervalSince(now()) * 1000))))
        }
        await time.wait(for: wakeUps, untilElapsed: start + wait)
    }

    private func deliver(_ pushes: [DuePush], to user: UserID) async {
        let trace = traces.isOn ? replyTraces.withLock { $0.removeValue(forKey: user) } : nil
        await traces.span("push.send", kind: .client, parent: trace, attributes: traces.isOn ? ["threaddesk.pushes": .int64(Int64(pushes.count))] : [:]) { _ in
            await deliverTraced(pushes, to: user)
        }
    }

    private func deliverTraced(_ pushes: [DuePush], to user: UserID) async {
        do {
            try await Deadline.within(settings.retryCap) {
                try await store.withUser(user) { context in
                    for push in pushes { try await deliver(push, context: &context) }
                }
            }
        } catch {
            logger.warning("Pushes for a user failed; they stay pending", metadata: ["user": "\(user.logValue)", "error": "\(error)"])
        }
    }

    private func deliver(_ push: DuePush, context: inout UserContext) async throws {
        guard var message = try await store.mirroredMessages([push.messageID]).first,
            case .pending(let attempts, let nextAttempt) = message.push, nextAttempt <= now()
        else { return }  // sent by another replica meanwhile, deleted, or not due after all
        message.push = try await send(message, attempts: attempts, context: &context)
        try await store.saveMirroredMessages([message])
    }

    /// The message's push state after one attempt.
    private func send(_ message: MirroredMessage, attempts: Int, context: inout UserContext) async throws -> PushState {
        guard message.isSupportReply else { return .abandoned }
        guard now().timeIntervalSince(message.id.date) < settings.maxAge / .seconds(1) else {
            metrics.pushes(outcome: "expired", app: context.id.app)
            logger.warning("Gave up on a push older than the push age limit", metadata: ["user": "\(context.id.logValue)", "attempts": "\(attempts)"])
            return .abandoned
        }
        guard var record = context.record, let token = record.pushToken else { return .abandoned }
        // An app this replica does not serve (taken out of the apps file, or not in this replica's
        // yet): its topic is unknown here; tried again later (the push age limit ends it).
        guard let app = catalog.app(of: record.id) else { return retryLater(after: attempts) }
        let topic = app.apnsTopic ?? apns.settings.topic
        let environment = record.pushEnvironment.map { APNsEnvironment(rawValue: $0.rawValue)! } ?? apns.settings.defaultEnvironment
        let badge = try await LiveFeed(store: store).unreadCount(record)
        if NoteMarkers.isSilent(message.content) {
            // No alert: the app refreshes in the background (pending only when those are on).
            return try await sendBackground(message, badge: badge, to: token, topic: topic, app: app.id, environment: environment, attempts: attempts)
        }
        let text = message.content.isEmpty ? Self.attachmentSummary(message) : message.content
        var alert = APNsNotification(
            title: settings.title, body: text, badge: badge, sound: settings.sound, threadID: context.id.local.rawValue,
            category: settings.category, custom: [PushPayload.messageID: message.id.description],
            // A retry after an answer that was lost replaces the first delivery on the device instead of doubling it.
            collapseID: message.id.description)
        alert.topic = topic
        do {
            try await apns.client.send(alert, to: token, environment: environment)
        } catch APNsError.rejected(let status, let reason, _) where reason.invalidatesDeviceToken {
            logger.notice("APNs says the device token is gone; removing it", metadata: ["user": "\(context.id.logValue)", "status": "\(status)"])
            record.pushToken = nil
            record.pushEnvironment = nil
            record.updatedAt = now()
            context.record = record
            metrics.pushes(outcome: "unregistered", app: context.id.app)
            return .abandoned
        } catch APNsError.rejected(let status, let reason, _) {
            // Retrying would be refused the same way.
            logger.error("APNs refused a push", metadata: ["user": "\(context.id.logValue)", "status": "\(status)", "reason": "\(reason)"])
            metrics.pushes(outcome: "rejected", app: context.id.app)
            return .abandoned
        } catch {
            metrics.pushes(outcome: "unavailable", app: context.id.app)
            return retryLater(after: attempts)
        }
        metrics.pushes(outcome: "sent", app: context.id.app)
        if settings.background {
            var background = APNsNotification(pushType: .background, badge: badge, custom: [PushPayload.messageID: message.id.description])
            background.topic = topic
            _ = try? await apns.client.send(background, to: token, environment: environment)
        }
        return .sent
    }

    /// Pending again, after a backoff that doubles with each attempt up to `retryCap`.
    private func retryLater(after attempts: Int) -> PushState {
        let delay = min(settings.retryCap, settings.retryBase * Double(1 << min(attempts, 20)))
        return .pending(attempts: attempts + 1, nextAttempt: now().addingTimeInterval(delay / .seconds(1)))
    }

    /// A silent reply's only push: in the background, retried like an alert.
    private func sendBackground(
        _ message: MirroredMessage, badge: Int, to token: String, topic: String, app: AppID, environment: APNsEnvironment, attempts: Int
    ) async throws -> PushState {
        var notification = APNsNotification(pushType: .background, badge: badge, custom: [PushPayload.messageID: message.id.description])
        notification.topic = topic
        do {
            try await apns.client.send(notification, to: token, environment: environment)
        } catch APNsError.rejected {
            metrics.pushes(outcome: "rejected", app: app)
            return .abandoned
        } catch {
            metrics.pushes(outcome: "unavailable", app: app)
            return retryLater(after: attempts)
        }
        metrics.pushes(outcome: "silent", app: app)
        return .sent
    }

    /// The alert's text for a reply of files only.
    /// - Parameter message: A support message without text.
    static func attachmentSummary(_ message: MirroredMessage) -> String {
        message.attachments.count == 1 ? "📎 \(message.attachments[0].filename)" : "📎 \(message.attachments.count) files"
    }
}

extension PushDispatcher: MirrorListener {
    /// A reply entered waiting for its push: the dispatcher wakes.
    func mirrorTookIn(_ intake: MirrorIntake) {
        guard intake.pushesPending else { return }
        if let trace = traces.current() {
            replyTraces.withLock { traces in
                if traces.count >= 10_000 { traces.removeAll() }
                traces[intake.owner] = trace
            }
        }
        wake()
    }
}
