import Foundation

/// The conversation's copy on the device (``ConversationStore``): read for the session's user,
/// written at most once per `saveDelay` while things change, and at once when asked (the
/// conversation stops, a push woke the app).
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
final class ConversationDeviceStore {
    /// What to keep, made when it is written (nil: nothing yet, no user): given the store's cap.
    typealias Snapshot = @MainActor (_ messageCap: Int) -> ConversationSnapshot?

    private let store: (any ConversationStore)?
    private let saveDelay: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private var saveTask: Task<Void, Never>?

    init(store: (any ConversationStore)?, saveDelay: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.store = store
        self.saveDelay = saveDelay
        self.sleep = sleep
    }

    /// The kept conversation of `user`; another user's (after a sign-out) is forgotten.
    func load(for user: String) async -> ConversationSnapshot? {
        guard let store, let snapshot = try? await store.load() else { return nil }
        guard snapshot.userID == user else {
            try? await store.save(nil)
            return nil
        }
        return snapshot
    }

    /// Writes `snapshot` after `saveDelay`, unless a write is scheduled already.
    func scheduleSave(_ snapshot: @escaping Snapshot) {
        guard store != nil, saveTask == nil else { return }
        saveTask = Task {
            do { try await self.sleep(self.saveDelay) } catch { return }
            self.saveTask = nil
            await self.save(snapshot)
        }
    }

    /// Writes `snapshot` now.
    func save(_ snapshot: Snapshot) async {
        guard let store, let kept = snapshot(store.messageCap) else { return }
        try? await store.save(kept)
    }

    /// Cancels the scheduled write (the conversation is stopping). Its handle stays until
    /// ``endCancelledSave()``, so nothing the stopping work does schedules another meanwhile.
    func cancelScheduledSave() {
        saveTask?.cancel()
    }

    /// Lets writes be scheduled again, once the work a stop waited for has ended.
    func endCancelledSave() {
        saveTask = nil
    }
}
