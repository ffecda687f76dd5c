import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// What Discord refused for good: marked failed (its files within the user's cap), and how a
/// failure is told from one that passes.
extension OutboxDelivery {
    /// Discord refused `item` for good: it stays in the outbox, failed (the user edits it to send
    /// it again, or deletes it), and the user sees why.
    func refuse(_ item: OutboxItem, _ refusal: DeliveryFailure, fence: OutboxFence, owner: UserID) async throws {
        var item = item
        item.failure = refusal
        // A failed item's next attempt is when it failed: its files are kept from then.
        item.nextAttempt = parts.time.now()
        parts.metrics.outboxFailure(code: refusal.code, app: owner.app)
        parts.logger.warning(
            "Discord refused a message for good; it is marked failed",
            metadata: ["user": "\(owner.logValue)", "code": "\(refusal.code)", "reason": "\(refusal.message)"])
        // A diagnostics report or crash note the user never sees: nothing to retry or delete, so it goes.
        if item.kind == .diagnostics || item.kind == .crash || item.kind == .note {
            try await parts.store.removeOutboxItem(item.id, fence: fence)
            return
        }
        // Under the user's lock, as every change of the user's rows (an edit of it waits for this).
        try await parts.users.withUser(owner) { _ in
            // Refused as it was; the user changed it meanwhile: deleted, it goes; edited, the new
            // text waits for an attempt of its own.
            if let change = try await userChange(of: item) {
                var retried = item
                switch change {
                case .deleted:
                    try await parts.store.removeOutboxItem(item.id, fence: fence)
                case .edited(let text):
                    (retried.content, retried.failure, retried.attempts, retried.nextAttempt) = (text, nil, 0, parts.time.now())
                    try await parts.store.updateOutboxItem(retried, fence: fence)
                    wake()
                }
                return
            }
            guard try await parts.store.updateOutboxItem(item, fence: fence), var row = try await parts.store.mirroredMessages([item.id]).first else { return }
            row.delivery = .failed
            row.deliveryError = refusal
            try await parts.ingestion.saveOutboxChange(row, owner: owner)
            try await failedFiles.cap(of: owner)
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
}
