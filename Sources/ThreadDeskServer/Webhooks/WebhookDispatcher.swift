import AsyncHTTPClient
import Deadlines
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Delivers the recorded webhook deliveries, from any replica: each claim is the first delivery
/// of its queue (one user's deliveries to one webhook, in the order recorded), leased to this
/// process while its request runs, so a user's events reach a webhook in order and the others'
/// go on beside them. A failure waits with backoff (the queue behind it waits too) and is sent
/// again with the same id and body; 2xx is done, 410 turns the webhook off, and a delivery still
/// failing after `giveUpAfter` is given up. A slow receiver holds at most `perWebhook` requests
/// for `timeout` each; one that cannot be reached rests a while, its deliveries untouched.
final class WebhookDispatcher: Service, Sendable, CustomStringConvertible {
    let store: any UserStore
    let catalog: AppCatalog
    let settings: WebhookSettings
    let httpClient: @Sendable () -> HTTPClient
    let metrics: ServerMetrics
    let logger: Logger
    let time: ServerTime
    let work: BackgroundWork
    /// Woken when deliveries are recorded (`UserSerializer.webhooksRecorded`, `WebhookEvents`),
    /// and when a send ends (the next of its queue is due).
    let wakeUps: WakeSignal
    /// The stop's shared drain, when the server has one: the sends' own drain ends with it too.
    let stop: ShutdownDrain?
    /// This process, as the holder of the deliveries it sends.
    let holder = "replica-" + UUID().uuidString
    static let workName = "webhooks"

    struct State {
        var running = 0
        var perHook: [String: Int] = [:]
        /// Webhooks that could not be reached, and until when they rest.
        var resting: [String: Date] = [:]
        var stopping = false
        var woken = false
    }

    let state = Mutex(State())
    /// Signalled whenever a send ends: the drain at shutdown waits on it.
    let sendEnded = WakeSignal()
    /// When a failing delivery was last logged, per webhook: a dead receiver is logged once a minute.
    let lastFailureLog = Mutex<[String: Date]>([:])

    var description: String { "WebhookDispatcher" }

    init(
        store: any UserStore, catalog: AppCatalog, settings: WebhookSettings, httpClient: @escaping @Sendable () -> HTTPClient,
        wakeUps: WakeSignal, metrics: ServerMetrics, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked,
        stop: ShutdownDrain? = nil
    ) {
        self.stop = stop
        (self.store, self.catalog, self.settings, self.httpClient, self.wakeUps) = (store, catalog, settings, httpClient, wakeUps)
        (self.metrics, self.logger, self.time, self.work) = (metrics, logger, time, work)
        // Deliveries due that no send has taken up yet (recorded, or the clock moved past a backoff).
        work.watch(Self.workName) { [weak self] in
            guard let self, self.state.withLock({ $0.resting.isEmpty }),
                let due = try? await self.store.nextWebhookDue(), due.timeIntervalSince1970 <= self.time.now().timeIntervalSince1970
            else { return false }
            self.wake()
            return true
        }
    }

    /// Deliveries were recorded, or a send ended.
    func wake() {
        state.withLock { state in
            if !state.woken { work.raise(Self.workName) }
            state.woken = true
        }
        wakeUps.signal()
    }

    func run() async throws {
        // One process serves a store without a bus (SQLite): leases left in it are those of the
        // process before this one, killed mid-send. Replicas over PostgreSQL wait for them to pass.
        if store.bus == nil {
            do {
                try await store.releaseWebhookLeases(except: holder)
            } catch {
                logger.warning("Could not release the webhook leases left by the last run", metadata: ["error": "\(error)"])
            }
        }
        await withDiscardingTaskGroup { group in
            await withGracefulShutdownHandler {
                while !state.withLock({ $0.stopping }), !Task.isCancelled {
                    let answering = state.withLock { state in
                        defer { state.woken = false }
                        return state.woken
                    }
                    let claimed = await claim()
                    work.begin(Self.workName, count: claimed.count)
                    for delivery in claimed {
                        group.addTask {
                            await self.send(delivery)
                            self.ended(delivery)
                        }
                    }
                    await reportDepth()
                    if answering { state.withLock { if !$0.woken { work.lower(Self.workName) } } }
                    await sleepUntilWoken(atLeast: claimed.isEmpty ? .seconds(1) : .milliseconds(10))
                }
            } onGracefulShutdown: {
                self.state.withLock { $0.stopping = true }
                self.wakeUps.signal()
            }
            // The sends under way get the drain (or what is left of the stop's, a length on the
            // server's clock: the same as the continuous one outside tests); then they are
            // cancelled (sent again later, same id).
            let deadline = ContinuousClock.now.advanced(by: stop.map { min(settings.drain, $0.left) } ?? settings.drain)
            while state.withLock({ $0.running }) > 0 {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { break }
                await sendEnded.wait(upTo: left)
            }
            group.cancelAll()
        }
    }

    /// Due deliveries for the free turns, none of a webhook at its share of them or resting.
    private func claim() async -> [WebhookDelivery] {
        let now = time.now()
        let (free, excluded) = state.withLock { state in
            state.resting = state.resting.filter { $0.value > now }
            let busy = state.perHook.filter { $0.value >= settings.perWebhook }.keys
            return (settings.concurrency - state.running, Set(busy).union(state.resting.keys))
        }
        guard free > 0 else { return [] }
        let claimed: [WebhookDelivery]
        do {
            claimed = try await store.claimWebhooks(
                now: now, until: now.addingTimeInterval(settings.lease / .seconds(1)), holder: holder, limit: free, excluding: excluded)
        } catch {
            logger.warning("Could not read the webhook deliveries", metadata: ["error": "\(error)"])
            return []
        }
        var taken: [WebhookDelivery] = []
        var handBack: [WebhookDelivery] = []
        state.withLock { state in
            for delivery in claimed {
                guard state.perHook[delivery.hook, default: 0] < settings.perWebhook else {
                    handBack.append(delivery)
                    continue
                }
                state.perHook[delivery.hook, default: 0] += 1
                state.running += 1
                taken.append(delivery)
            }
        }
        // More of one webhook than its share: let go as they were, for a later pass.
        for delivery in handBack { try? await store.retryWebhook(delivery.id, attempts: delivery.attempts, nextAttempt: delivery.nextAttempt) }
        return taken
    }

    private func ended(_ delivery: WebhookDelivery) {
        state.withLock { state in
            state.running -= 1
            state.perHook[delivery.hook, default: 1] -= 1
            if state.perHook[delivery.hook] == 0 { state.perHook[delivery.hook] = nil }
        }
        sendEnded.signal()
        // The next of its queue may be due now.
        wake()
        work.end(Self.workName)
    }

    /// Until woken, the next delivery is due, or `idlePoll` passed (a moment on the clock, read
    /// before the store: a clock that moves meanwhile makes the wake-up earlier, never later).
    private func sleepUntilWoken(atLeast minimum: Duration) async {
        let start = time.elapsed()
        var wait = settings.idlePoll
        if let next = try? await store.nextWebhookDue() {
            wait = max(minimum, min(wait, .milliseconds(Int64(max(0, next.timeIntervalSince(time.now())) * 1000))))
        }
        await time.wait(for: wakeUps, untilElapsed: start + wait)
    }

    /// The deliveries waiting and the oldest one's age, for `/metrics`.
    private func reportDepth() async {
        guard let usage = try? await store.webhookUsage() else { return }
        metrics.webhooks.depth.set(to: Double(usage.count))
        metrics.webhooks.oldest.set(to: usage.oldest.map { max(0, time.now().timeIntervalSince($0)) } ?? 0)
    }

    /// The HTTP client webhooks are posted with: no redirect is followed (a receiver that moved
    /// gives its new URL in the configuration).
    static func makeHTTPClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 8
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
