import Deadlines
import Synchronization

/// Turns for work that must not all run at once (the streams being opened in this process): up to
/// `turns` hold one, up to `maxWaiting` more wait in arrival order for at most `wait` on the
/// server's clock, and the rest are turned away at once. Every operation is O(1): a waiter's
/// place is its ticket, tickets are handed out in order, and the oldest is found by walking the
/// tickets once (each one is passed over once, whether it was served or gave up).
final class OpeningTurns: Sendable {
    /// Why no turn was given.
    enum Refusal: Error, Equatable {
        /// `maxWaiting` were waiting already.
        case full
        /// No turn came within `wait`.
        case waitedTooLong
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>
        var timer: Task<Void, Never>?
    }

    /// A place in the queue.
    private enum Place {
        /// Taken, its waiter not yet suspended.
        case reserved
        case waiting(Waiter)
        /// Given a turn before its waiter suspended: it goes on at once when it does.
        case granted
    }

    private struct State {
        var holding = 0
        /// The oldest ticket not yet passed over.
        var head: UInt64 = 0
        /// The ticket the next waiter gets.
        var tail: UInt64 = 0
        /// The queue, by ticket: a waiter that gave up is gone from here, and its ticket is skipped.
        var places: [UInt64: Place] = [:]

        /// Gives the turn being given back to the oldest place still queued: its waiter to resume,
        /// or nil when nobody waits (or the turn went to a waiter about to suspend).
        mutating func handOver() -> (handed: Bool, resume: Waiter?) {
            while head < tail {
                defer { head += 1 }
                switch places[head] {
                case .waiting(let waiter)?:
                    places[head] = nil
                    return (true, waiter)
                case .reserved?:
                    places[head] = .granted
                    return (true, nil)
                case .granted?, nil:
                    continue
                }
            }
            return (false, nil)
        }
    }

    let turns: Int
    let maxWaiting: Int
    /// How long one waits for a turn at most.
    let wait: Duration
    private let time: ServerTime
    private let state = Mutex(State())
    /// Told after every change, with how many hold a turn and how many wait (metrics; tests await a
    /// queue's state with it). Called under the lock: it must not call back.
    private let observer: @Sendable (_ holding: Int, _ waiting: Int) -> Void

    init(
        turns: Int, maxWaiting: Int, wait: Duration, time: ServerTime,
        observer: @escaping @Sendable (_ holding: Int, _ waiting: Int) -> Void = { _, _ in }
    ) {
        precondition(turns > 0 && maxWaiting >= 0)
        (self.turns, self.maxWaiting, self.wait, self.time, self.observer) = (turns, maxWaiting, wait, time, observer)
    }

    /// Runs `body` holding a turn.
    /// - Throws: `Refusal` when no turn was given, `CancellationError` when the task was
    ///   cancelled while waiting, and what `body` throws.
    func withTurn<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        try await take()
        defer { giveBack() }
        return try await body()
    }

    /// How many hold a turn and how many wait, now.
    var counts: (holding: Int, waiting: Int) { state.withLock { ($0.holding, $0.places.count) } }

    private func take() async throws {
        enum Entry { case holds, refused, waits(UInt64) }
        // The place is taken here, before suspending: arrival order is the order of this lock.
        let entry = state.withLock { state -> Entry in
            if state.holding < turns, state.places.isEmpty {
                state.holding += 1
                return .holds
            }
            guard state.places.count < maxWaiting else { return .refused }
            state.places[state.tail] = .reserved
            state.tail += 1
            return .waits(state.tail - 1)
        }
        switch entry {
        case .holds:
            changed()
        case .refused:
            throw Refusal.full
        case .waits(let ticket):
            changed()
            try await waitForTurn(ticket)
        }
    }

    private func waitForTurn(_ ticket: UInt64) async throws {
        try await suspendCancellably { continuation in
            enum Outcome { case goes, cancelled, waits }
            let outcome = state.withLock { state -> Outcome in
                switch state.places[ticket] {
                case .granted?:
                    state.places[ticket] = nil
                    return .goes
                case .reserved?:
                    state.places[ticket] = .waiting(Waiter(continuation: continuation))
                    return .waits
                case .waiting?, nil:
                    // Cancelled before it suspended.
                    return .cancelled
                }
            }
            switch outcome {
            case .goes:
                changed()
                continuation.resume()
            case .cancelled:
                continuation.resume(throwing: CancellationError())
            case .waits:
                // The wait's deadline: a task of its own (the waiter is a continuation), cancelled
                // as soon as the turn comes.
                let timer = Task { [weak self, time, wait] in
                    guard (try? await time.sleep(for: wait)) != nil else { return }
                    self?.abandon(ticket, Refusal.waitedTooLong)
                }
                let waiting = state.withLock { state -> Bool in
                    guard case .waiting(var waiter)? = state.places[ticket] else { return false }
                    waiter.timer = timer
                    state.places[ticket] = .waiting(waiter)
                    return true
                }
                if !waiting { timer.cancel() }
            }
        } abandon: { [weak self] in
            self?.abandon(ticket, CancellationError())
        }
    }

    /// Takes a waiter out of the queue and fails it; nothing when it got its turn and went on.
    private func abandon(_ ticket: UInt64, _ error: any Error) {
        enum Found { case waiter(Waiter), grantedTurn, nothing }
        let found = state.withLock { state -> Found in
            switch state.places.removeValue(forKey: ticket) {
            case .waiting(let waiter)?: return .waiter(waiter)
            // Its turn came before it suspended: it suspends to find its place gone and throws.
            case .granted?: return .grantedTurn
            case .reserved?, nil: return .nothing
            }
        }
        switch found {
        case .waiter(let waiter):
            waiter.timer?.cancel()
            waiter.continuation.resume(throwing: error)
            changed()
        case .grantedTurn:
            giveBack()
        case .nothing:
            changed()
        }
    }

    /// Hands the turn straight to the oldest waiter, so nobody overtakes it.
    private func giveBack() {
        let next = state.withLock { state -> Waiter? in
            let (handed, waiter) = state.handOver()
            if !handed { state.holding -= 1 }
            return waiter
        }
        next?.timer?.cancel()
        next?.continuation.resume()
        changed()
    }

    /// Tells the observer, under the lock: the counts it sees are never older than ones it saw.
    private func changed() {
        state.withLock { state in observer(state.holding, state.places.count) }
    }
}
