import HTTPTypes
import Synchronization
import ThreadDeskWire

/// Who a large body is read for: a user, and the client's network while per-address limits are on
/// (nil otherwise: the sandbox and most tests are one address acting as many users).
struct SlotHolder: Sendable, Hashable {
    var user: String
    var network: String?

    fileprivate var keys: [String] { ["user:\(user)"] + (network.map { ["network:\($0)"] } ?? []) }
}

/// The holders of every large-body gate's slots (uploads and diagnostics share one): each holds at
/// most one slot at a time, so a token or a network that renews trickling bodies keeps one slot,
/// never all of a process's.
final class SlotHolders: Sendable {
    private let held = Mutex<Set<String>>([])

    init() {}

    /// Marks `holder` as holding a slot; false when it (its user or its network) holds one already.
    fileprivate func take(_ holder: SlotHolder) -> Bool {
        held.withLock { held in
            let keys = holder.keys
            guard keys.allSatisfy({ !held.contains($0) }) else { return false }
            held.formUnion(keys)
            return true
        }
    }

    fileprivate func release(_ holder: SlotHolder) {
        held.withLock { $0.subtract(holder.keys) }
    }
}

/// At most `limit` holders at once, each at most one slot of all the gates that share `holders`;
/// `enter` never waits.
final class ConcurrencyGate: Sendable {
    private let count = Mutex(0)
    let limit: Int
    let holders: SlotHolders

    init(limit: Int, holders: SlotHolders) {
        self.limit = limit
        self.holders = holders
    }

    /// A slot for `holder`.
    /// - Parameter busy: What a client is told when every slot is taken (503 `busy`).
    /// - Throws: 429 `upload_in_progress` when `holder` holds a slot already (of this gate or
    ///   another), 503 `busy` when every slot is taken: never a wait, never a second slot.
    func enter(_ holder: SlotHolder, busy: String) throws(APIError) -> LargeBodySlot {
        guard holders.take(holder) else {
            throw APIError(
                .tooManyRequests, .uploadInProgress,
                "Another large upload of yours (or of your network) is being received; send this one when it is done.", retryAfterSeconds: 2)
        }
        let entered = count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard entered else {
            holders.release(holder)
            throw APIError(.serviceUnavailable, .busy, busy, retryAfterSeconds: 2)
        }
        return LargeBodySlot(gate: self, holder: holder)
    }

    fileprivate func leave(_ holder: SlotHolder) {
        count.withLock { $0 -= 1 }
        holders.release(holder)
    }
}

/// A slot of a `ConcurrencyGate`, held until `leave()`.
struct LargeBodySlot: Sendable {
    fileprivate let gate: ConcurrencyGate
    fileprivate let holder: SlotHolder

    func leave() { gate.leave(holder) }
}
