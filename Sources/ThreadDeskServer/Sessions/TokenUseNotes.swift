import Deadlines
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Notes a token's use (and a user's first request) beside the request that used it, not in its
/// path: for a stream's opening, which must not wait on the user's lock. A new user's first
/// request writes under that lock, and an app opens a user's streams at once (on as many replicas):
/// in a burst of openings those writes queued on one another until the openings' deadlines passed.
///
/// What waits here is coalesced per token, a few written at a time, each first read without the
/// lock (another replica, or another request, may have written it already). A note that cannot be
/// written (the store away, a backlog past `capacity`, shutdown) is dropped: the user's record
/// still lacks it, so the token's next request notes it again. Asleep while nobody opens a stream.
final class TokenUseNotes: Service, Sendable {
    struct Token: Hashable, Sendable {
        let user: UserID
        let hash: String
    }

    /// What a token's request asked to note.
    struct Note: Sendable {
        /// The use to note (the latest asked for), or nil when only the user's first use is.
        var usedAt: Date?

        mutating func merge(_ other: Note) {
            if let later = other.usedAt, usedAt.map({ later > $0 }) ?? true { usedAt = later }
        }
    }

    private let users: UserSerializer
    private let store: any UserRecords
    /// How long one note's write may take, the wait for the user's lock included.
    private let timeout: Duration
    /// How often a token's use is written at most (`SessionSettings.useNotedEvery`).
    private let noteEvery: Duration?
    private let logger: Logger
    private let pending = Mutex<[Token: Note]>([:])
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork
    static let capacity = 50_000
    static let concurrency = 4
    static let workName = "token use notes"

    init(
        users: UserSerializer, store: any UserRecords, settings: SessionSettings, timeout: Duration, logger: Logger,
        work: BackgroundWork = .untracked
    ) {
        (self.users, self.store, self.timeout, self.logger, self.work) = (users, store, timeout, logger, work)
        noteEvery = settings.useNotedEvery
    }

    /// Asks for `token`'s first use, and its use at `usedAt` if given, to be noted. At once: the
    /// note follows from here.
    func note(_ token: Token, usedAt: Date?) {
        let note = Note(usedAt: usedAt)
        let queued = pending.withLock { pending -> Bool? in
            if pending[token] != nil {
                pending[token]!.merge(note)
                return false
            }
            guard pending.count < Self.capacity else { return nil }
            pending[token] = note
            return true
        }
        switch queued {
        case true?:
            work.begin(Self.workName)
            wakeUps.signal()
        case false?:
            break
        case nil:
            logger.debug("A token's use was not noted: too many waiting", metadata: ["user": "\(token.user.logValue)"])
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while await self.wakeUps.wait() { await self.flush() }
        }
        // Shutting down: what is left is dropped (its token's next request notes it again).
        let left = pending.withLock { pending in
            defer { pending.removeAll() }
            return pending.count
        }
        work.end(Self.workName, count: left)
    }

    private func flush() async {
        while !Task.isCancelled {
            let notes = pending.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            guard !notes.isEmpty else { return }
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for (token, note) in notes {
                    if Task.isCancelled {
                        work.end(Self.workName)
                        continue
                    }
                    if running == Self.concurrency {
                        await group.next()
                        running -= 1
                    }
                    group.addTask {
                        await self.write(note, of: token)
                        self.work.end(Self.workName)
                    }
                    running += 1
                }
            }
        }
    }

    private func write(_ note: Note, of token: Token) async {
        do {
            try await Deadline.within(timeout) {
                // Read first, without the lock: often another replica noted it meanwhile.
                guard let record = try await store.user(token.user), needs(note, record, token.hash) else { return }
                try await users.withUser(token.user, work: .brief) { context in
                    // Only while the token holds: a claim that replaced it meanwhile wins (see
                    // `SessionService.authenticate`), and its streams have ended.
                    guard var current = context.record, needs(note, current, token.hash) else { return }
                    current.history.insert(.used)
                    if let usedAt = note.usedAt, usesNeedNoting(usedAt, after: current.tokenUsedAt[token.hash]) {
                        current.noteTokenUse(hash: token.hash, at: usedAt)
                    }
                    context.record = current
                }
            }
        } catch {
            logger.info("Could not note a token's use", metadata: ["user": "\(token.user.logValue)", "error": "\(error)"])
        }
    }

    /// Whether `record` still holds the token and lacks what `note` asks for.
    private func needs(_ note: Note, _ record: UserRecord, _ hash: String) -> Bool {
        guard record.holdsToken(hash: hash) else { return false }
        if !record.history.contains(.used) { return true }
        return note.usedAt.map { usesNeedNoting($0, after: record.tokenUsedAt[hash]) } ?? false
    }

    /// A use at `usedAt` is worth a write after the one noted at `last`: none noted, or one a
    /// `noteEvery` older (another replica's note of the same burst is as good).
    private func usesNeedNoting(_ usedAt: Date, after last: Date?) -> Bool {
        guard let last else { return true }
        guard let noteEvery else { return false }
        return usedAt.timeIntervalSince(last) >= noteEvery / .seconds(1)
    }
}
