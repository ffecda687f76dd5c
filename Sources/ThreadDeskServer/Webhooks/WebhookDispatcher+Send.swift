import AsyncHTTPClient
import Foundation
import Logging
import Prometheus
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

extension WebhookDispatcher {
    /// How one attempt ended.
    enum Outcome: Sendable, Equatable {
        /// 2xx.
        case delivered
        /// 410 Gone: the receiver wants no more.
        case gone
        /// Another status: tried again later.
        case refused(status: Int)
        /// No answer within the deadline, or no connection.
        case unreachable(String)
    }

    /// One attempt of `delivery`, and what follows from its outcome.
    func send(_ delivery: WebhookDelivery) async {
        guard let target = catalog[delivery.app]?.webhooks.first(where: { $0.key(app: delivery.app) == delivery.hook }) else {
            // The webhook is no longer configured (its URL changed, or it was removed).
            await drop(delivery, reason: "its webhook is no longer configured")
            return
        }
        do {
            if try await store.webhooksOff().contains(where: { $0.hook == delivery.hook }) {
                await drop(delivery, reason: "its webhook is off (the receiver answered 410)")
                return
            }
        } catch {
            return logFailure(delivery, target: target, "Could not read the webhooks turned off", error: "\(error)")
        }
        let outcome = await post(delivery, to: target)
        do {
            try await settle(delivery, target: target, outcome: outcome)
        } catch {
            // Its lease runs out and it is sent again, with the same id.
            logFailure(delivery, target: target, "Could not record a webhook delivery's outcome", error: "\(error)")
        }
    }

    /// The request: the body as recorded, signed now, within `settings.timeout` (real time: a
    /// wait on another machine).
    func post(_ delivery: WebhookDelivery, to target: WebhookTarget) async -> Outcome {
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "ThreadDesk-Webhooks/1")
        request.headers.add(name: "ThreadDesk-Event", value: delivery.type)
        request.headers.add(name: "ThreadDesk-Delivery", value: delivery.id)
        request.headers.add(name: WebhookSignature.header, value: WebhookSignature.value(body: delivery.body, secret: target.secret, at: time.now()))
        request.body = .bytes(ByteBuffer(data: delivery.body))
        let sent = request
        let (client, timeout) = (httpClient(), settings.timeout)
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(sent, deadline: .now() + .nanoseconds(Int64(timeout / .nanoseconds(1))))
                    // Read (and forget) what the receiver says, up to a bound: the connection is then free.
                    _ = try? await response.body.collect(upTo: 64 * 1024)
                    let status = Int(response.status.code)
                    if (200..<300).contains(status) { return .delivered }
                    return status == 410 ? .gone : .refused(status: status)
                } catch {
                    return .unreachable(String(describing: error))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .unreachable("no answer within \(timeout)")
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .unreachable("cancelled")
        }
    }

    /// Done, off, or waiting for the next attempt (or given up past `giveUpAfter`).
    func settle(_ delivery: WebhookDelivery, target: WebhookTarget, outcome: Outcome) async throws {
        let now = time.now()
        switch outcome {
        case .delivered:
            try await store.finishWebhook(delivery.id)
            metrics.webhooks.delivered.increment()
        case .gone:
            let dropped = try await store.turnWebhookOff(WebhookOff(hook: delivery.hook, app: delivery.app, host: target.host, since: now))
            metrics.webhooks.givenUp.increment(by: Int64(max(1, dropped)))
            logger.warning(
                "A webhook's receiver answered 410 Gone: the webhook is off, nothing more is sent to it",
                metadata: ["app": "\(delivery.app)", "host": "\(target.host)", "dropped": "\(dropped)"])
        case .refused, .unreachable:
            metrics.webhooks.failures.increment()
            let attempts = delivery.attempts + 1
            let wait = settings.backoff(after: attempts)
            let next = now.addingTimeInterval(wait / .seconds(1))
            if case .unreachable = outcome {
                // The receiver is down: its other deliveries rest too, rather than each time out.
                let rest = now.addingTimeInterval(min(wait, .seconds(60)) / .seconds(1))
                state.withLock { $0.resting[delivery.hook] = rest }
            }
            let reason = switch outcome {
            case .refused(let status): "status \(status)"
            case .unreachable(let why): why
            default: ""
            }
            if next.timeIntervalSince(delivery.createdAt) > settings.giveUpAfter / .seconds(1) {
                try await store.finishWebhook(delivery.id)
                metrics.webhooks.givenUp.increment()
                logger.warning(
                    "A webhook delivery failed for days and is given up",
                    metadata: ["app": "\(delivery.app)", "host": "\(target.host)", "type": "\(delivery.type)", "attempts": "\(attempts)", "reason": "\(reason)"])
                return
            }
            try await store.retryWebhook(delivery.id, attempts: attempts, nextAttempt: next)
            logFailure(delivery, target: target, "A webhook delivery failed; it is sent again later", error: reason)
        }
    }

    /// A delivery nothing will take: removed, and counted as given up.
    private func drop(_ delivery: WebhookDelivery, reason: String) async {
        do {
            try await store.finishWebhook(delivery.id)
            metrics.webhooks.givenUp.increment()
            logger.notice("A webhook delivery is dropped", metadata: ["app": "\(delivery.app)", "type": "\(delivery.type)", "reason": "\(reason)"])
        } catch {
            logger.warning("Could not drop a webhook delivery", metadata: ["error": "\(error)"])
        }
    }

    /// Logs a failure at most once a minute per webhook (a dead receiver fails every delivery).
    func logFailure(_ delivery: WebhookDelivery, target: WebhookTarget, _ message: Logger.Message, error: String) {
        let now = time.now()
        let due = lastFailureLog.withLock { last in
            guard last[delivery.hook].map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            last[delivery.hook] = now
            return true
        }
        guard due else { return }
        logger.warning(message, metadata: ["app": "\(delivery.app)", "host": "\(target.host)", "attempts": "\(delivery.attempts + 1)", "error": "\(error)"])
    }
}
