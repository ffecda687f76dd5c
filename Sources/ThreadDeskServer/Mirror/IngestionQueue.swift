import Deadlines
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore

/// Gateway facts waiting for their owner's lock, one queue per user: a user's facts are ingested
/// in the order they came, different users' side by side (at most `concurrency` at once), so a
/// user with a long queue of their own sends holds up nobody else's replies.
///
/// What is queued is not yet stored: a restart loses it, which is why the server counts its own
/// start as a gap of the feed (the reconciliation then reads those threads from REST).
final class IngestionQueue: Service, Sendable, CustomStringConvertible {
    typealias Job = @Sendable () async -> Void

    private struct State {
        var queues: [UserID: [Job]] = [:]
        var busy: Set<UserID> = []
        var queued = 0
        var stopping = false
    }

    let limit: Int
    let concurrency: Int
    private let state = Mutex(State())
    private let wakeUps = WakeSignal()
    private let work: BackgroundWork

    var description: String { "IngestionQueue" }

    init(limit: Int = 10_000, concurrency: Int = 32, work: BackgroundWork = .untracked) {
        self.limit = limit
        self.concurrency = concurrency
        self.work = work
    }

    /// Queues `job` behind `owner`'s earlier ones; false when the queue is full (the caller then
    /// treats the fact as lost: a gap).
    func enqueue(_ owner: UserID, _ job: @escaping Job) -> Bool {
        let accepted = state.withLock { state in
            guard state.queued < limit else { return false }
            state.queues[owner, default: []].append(job)
            state.queued += 1
            return true
        }
        if accepted {
            work.begin(Self.workName)
            wakeUps.signal()
        }
        return accepted
    }

    static let workName = "ingestion"

    /// Facts queued and not yet ingested.
    var pending: Int { state.withLock { $0.queued } }

    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                while true {
                    let (ready, done) = takeReady()
                    for (owner, jobs) in ready {
                        group.addTask { await self.work(owner, jobs) }
                    }
                    if done { break }
                    // A cancelled wait returns at once: leave rather than spin (the jobs under way finish).
                    guard await wakeUps.wait() || !Task.isCancelled else { break }
                }
            }
        } onGracefulShutdown: {
            self.state.withLock { $0.stopping = true }
            self.wakeUps.signal()
        }
    }

    /// Owners with work and no worker; and whether the loop may end (stopping, nothing left).
    private func takeReady() -> ([(UserID, [Job])], Bool) {
        state.withLock { state in
            var ready: [(UserID, [Job])] = []
            for (owner, jobs) in state.queues where !jobs.isEmpty && !state.busy.contains(owner) && state.busy.count < concurrency {
                state.busy.insert(owner)
                state.queues[owner] = nil
                ready.append((owner, jobs))
            }
            return (ready, state.stopping && state.queued == 0 && state.busy.isEmpty)
        }
    }

    /// Runs the owner's jobs in order, then any that came meanwhile.
    private func work(_ owner: UserID, _ first: [Job]) async {
        var jobs = first
        while !jobs.isEmpty {
            for job in jobs {
                await job()
                state.withLock { $0.queued -= 1 }
                work.end(Self.workName)
            }
            jobs = state.withLock { state in
                let more = state.queues[owner] ?? []
                state.queues[owner] = nil
                if more.isEmpty { state.busy.remove(owner) }
                return more
            }
        }
        wakeUps.signal()
    }
}
