/// The hub's timer: when it ticks, and which streams get their keep-alive at each tick. The
/// streams are spread by id over `slots` ticks of one interval, so a process holding many writes
/// a slice of them at a time: 17,000 keep-alives written at once held every event behind them for
/// a third of a second. Each stream still gets one keep-alive per interval.
struct KeepAliveRounds: Sendable {
    /// Ticks per keep-alive interval: one every 100 ms at most, at most 50.
    let slots: Int
    /// How long the timer sleeps between ticks; stall and lifetime checks run at each.
    let tick: Duration
    /// Ticks between two looks at every stream for a stalled write or a lifetime over: about a
    /// second, or a quarter of the write timeout when that is shorter. Such a look walks every
    /// stream; a keep-alive round takes only its slot's.
    let sweepTicks: Int
    private let slotLength: Duration
    private var sinceSlot = Duration.zero
    private var slot = 0
    private var sinceSweep = 0

    init(keepAlive: Duration, writeTimeout: Duration, maxDuration: Duration) {
        slots = max(1, min(50, Int(keepAlive / .milliseconds(100))))
        slotLength = keepAlive / slots
        tick = min(slotLength, writeTimeout / 2, max(maxDuration / 10, .milliseconds(100)))
        sweepTicks = max(1, Int(min(.seconds(1), writeTimeout / 4) / tick))
    }

    /// One tick has passed (after `advance()`): whether every stream is looked at now.
    mutating func sweepDue() -> Bool {
        sinceSweep += 1
        guard sinceSweep >= sweepTicks else { return false }
        sinceSweep = 0
        return true
    }

    /// One tick has passed: the slot whose streams get a keep-alive now, nil when none is due.
    /// Rounded to the nearest tick: never more than half a tick late.
    mutating func advance() -> Int? {
        sinceSlot += tick
        guard sinceSlot + tick / 2 >= slotLength else { return nil }
        // The remainder carries over, so rounds keep their length when the tick does not divide a slot.
        sinceSlot -= slotLength
        slot = (slot + 1) % slots
        return slot
    }

    /// Whether stream `id` gets its keep-alive in `slot`.
    func isDue(_ id: UInt64, in slot: Int) -> Bool { id % UInt64(slots) == UInt64(slot) }
}
