import Deadlines
import Prometheus
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// One user's work at a time: the store's `withUser`, as every service takes a user. Its latency
/// is recorded, and once the body gave the user a thread and the record holding it is committed,
/// the global value `threadRecorded` names for the user goes (the Threads feature's note that
/// Discord may have a thread of theirs the store does not know).
struct UserSerializer: Sendable {
    let store: any UserRecords & GlobalValues
    let metrics: ServerMetrics
    let logger: Logger
    /// The key of what is cleared once a user's thread is recorded.
    let threadRecorded: @Sendable (UserID) -> String
    /// Signalled once a transaction that recorded webhook deliveries committed: the delivery,
    /// woken before the commit, would find nothing.
    let webhooksRecorded = WakeSignal()

    /// Runs `body` on the user's record, alone among the user's work on every replica.
    /// - Parameters:
    ///   - id: The user.
    ///   - idempotencyKey: A client's key: a retry gets the answer kept for it.
    ///   - work: Whether the body waits on others (Discord) while it holds the user.
    ///   - body: Reads and changes the user's record; what it changed is saved when it returns.
    /// - Throws: When the user's turn does not come in time or the store fails, and what `body` throws.
    func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String? = nil, work: UserWork = .waitsOnOthers, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        let start = ContinuousClock.now
        defer { metrics.storeLatency.record(start.duration(to: .now)) }
        var gotThread = false
        var recordedWebhooks = false
        let result = try await store.withUser(id, idempotencyKey: idempotencyKey, work: work) { context in
            let before = context.record?.threadID
            defer {
                gotThread = context.record?.threadID.map { $0 != before } ?? false
                recordedWebhooks = !context.webhookEvents.isEmpty
            }
            return try await body(&context)
        }
        if recordedWebhooks { webhooksRecorded.signal() }
        if gotThread {
            // Left behind, it costs one read of the active threads if this user ever needs a new one.
            do {
                try await store.setGlobalValue(threadRecorded(id), to: nil)
            } catch {
                logger.warning("Could not clear the note of an unrecorded thread", metadata: ["user": "\(id.logValue)", "error": "\(error)"])
            }
        }
        return result
    }
}
