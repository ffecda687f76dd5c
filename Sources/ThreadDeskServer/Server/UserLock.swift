import Prometheus
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// The store's `withUser`, as every service takes a user: its latency recorded, and once the body
/// gave the user a thread and the record holding it is committed, the note that Discord may have
/// a thread of theirs the store does not know (`ThreadNotes.unrecordedThreadKey`) goes.
struct UserLock: Sendable {
    let store: any UserRecords & GlobalValues
    let metrics: ServerMetrics
    let logger: Logger

    func withUser<T: Sendable>(
        _ id: UserID, idempotencyKey: String? = nil, work: UserWork = .waitsOnOthers, _ body: (inout UserContext) async throws -> T
    ) async throws -> T {
        let start = ContinuousClock.now
        defer { metrics.storeLatency.record(start.duration(to: .now)) }
        var gotThread = false
        let result = try await store.withUser(id, idempotencyKey: idempotencyKey, work: work) { context in
            let before = context.record?.threadID
            defer { gotThread = context.record?.threadID.map { $0 != before } ?? false }
            return try await body(&context)
        }
        if gotThread {
            // Left behind, it costs one read of the active threads if this user ever needs a new one.
            do {
                try await store.setGlobalValue(ThreadNotes.unrecordedThreadKey(id), to: nil)
            } catch {
                logger.warning("Could not clear the note of an unrecorded thread", metadata: ["user": "\(id.logValue)", "error": "\(error)"])
            }
        }
        return result
    }
}
