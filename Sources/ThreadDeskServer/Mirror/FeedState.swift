import Foundation
import Synchronization
import ThreadDeskStore

/// What the server knows about the gateway feed, shared by every replica through the store.
///
/// The feed's *epoch* counts its gaps: a new session instead of a resume, a forwarder overflow, a
/// silence longer than `staleAfter`, a restart of the daemon. A thread's mirror is trusted when the
/// feed is live and REST has confirmed the thread in the current epoch, or the reconciliation
/// after the epoch's gap has finished. Reads look at a copy at most `cacheFor` old.
final class FeedState: Sendable {
    struct Snapshot: Sendable, Hashable {
        var heardAt: Date?
        var epoch: Int
        var reconciledEpoch: Int
        var live: Bool

        /// Whether a thread REST confirmed in `epoch` needs nothing more to be current.
        func trusts(_ thread: MirrorThread) -> Bool {
            live && thread.complete && (thread.syncedEpoch >= epoch || reconciledEpoch >= epoch)
        }
    }

    static let heardKey = "feed.heard-at"
    static let epochKey = "feed.epoch"
    static let reconciledKey = "feed.reconciled-epoch"

    private let store: any GlobalValues & MirrorStore
    private let staleAfter: Duration
    private let cacheFor: Duration = .seconds(1)
    private let now: @Sendable () -> Date
    private let cache = Mutex<(snapshot: Snapshot, at: Date)?>(nil)
    /// When this process last wrote `heardAt` (written at most every few seconds).
    private let lastWrite = Mutex<Date?>(nil)

    init(store: any GlobalValues & MirrorStore, staleAfter: Duration, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.staleAfter = staleAfter
        self.now = now
    }

    private var staleSeconds: Double { staleAfter / .seconds(1) }

    func snapshot() async throws -> Snapshot {
        let time = now()
        if let cached = cache.withLock({ $0 }), time.timeIntervalSince(cached.at) < cacheFor / .seconds(1) {
            var snapshot = cached.snapshot
            snapshot.live = snapshot.heardAt.map { time.timeIntervalSince($0) < staleSeconds } ?? false
            return snapshot
        }
        return try await load()
    }

    private func load() async throws -> Snapshot {
        let time = now()
        let heard = try await store.globalValue(Self.heardKey).flatMap(Double.init).map(Date.init(timeIntervalSince1970:))
        let epoch = try await store.globalValue(Self.epochKey).flatMap { Int($0) } ?? 0
        let reconciled = try await store.globalValue(Self.reconciledKey).flatMap { Int($0) } ?? 0
        let snapshot = Snapshot(
            heardAt: heard, epoch: epoch, reconciledEpoch: reconciled, live: heard.map { time.timeIntervalSince($0) < staleSeconds } ?? false)
        cache.withLock { $0 = (snapshot, time) }
        return snapshot
    }

    /// The gateway spoke. After a silence past `staleAfter` (or the first time ever) that is a gap:
    /// what was said meanwhile may be lost. Returns whether it was one.
    @discardableResult
    func heard() async throws -> Bool {
        let time = now()
        if let written = lastWrite.withLock({ $0 }), time.timeIntervalSince(written) < min(5, staleSeconds / 4) { return false }
        let current = try await load()
        let wasSilent = current.heardAt.map { time.timeIntervalSince($0) >= staleSeconds } ?? true
        if wasSilent { try await store.setGlobalValue(Self.epochKey, to: String(current.epoch + 1)) }
        try await store.setGlobalValue(Self.heardKey, to: String(time.timeIntervalSince1970))
        lastWrite.withLock { $0 = time }
        cache.withLock { $0 = nil }
        return wasSilent
    }

    /// Events may have been lost: every thread must be confirmed again.
    func gap() async throws {
        let current = try await load()
        try await store.setGlobalValue(Self.epochKey, to: String(current.epoch + 1))
        cache.withLock { $0 = nil }
    }

    /// The reconciliation of `epoch` has finished: every thread is current again.
    func reconciled(_ epoch: Int) async throws {
        let current = try await load()
        guard epoch > current.reconciledEpoch else { return }
        try await store.setGlobalValue(Self.reconciledKey, to: String(epoch))
        cache.withLock { $0 = nil }
    }

    /// Forgets the cached copy (tests, and after this process changed the state).
    func invalidate() { cache.withLock { $0 = nil } }
}
