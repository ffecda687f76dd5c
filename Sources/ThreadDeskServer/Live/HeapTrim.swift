#if canImport(Glibc)
import Glibc
#endif

/// When to give the C heap's free memory back to the system: once a burst of stream openings is
/// over, and whenever the heap holds much more free memory than after the last trim. Opening
/// thousands of streams at once (a deploy, a network blip) reads the store for each at the same
/// time; glibc keeps the pages those reads freed in its arenas, so a replica that opened 15,000
/// streams in a burst held 1 GiB where its streams and caches needed 0.3 (`bench/RESULTS.md`).
/// Trimming after the burst, not during it, costs a pass over the heap or two per burst: one when
/// the openings stop, one when the work they left behind (each token's first-use note, written a
/// few at a time) is surely done. On a busy machine that work outlasts any fixed wait (issue 62:
/// 32–37 KiB per idle stream where a quiet run held 13), so the heap's own state decides too:
/// what is resident and not in use by the heap (`ProcessMemory.notInUse`) grown past `held` (or a
/// quarter of the heap in use) since the last trim is given back, at most once per `spacing`.
///
/// The resident size is read every `readEvery` (a read of `/proc/self/statm`); the heap's figures
/// when the resident size moved by `held` since they were last read, again `followUp` after such a
/// move or a trim (memory in use then is often freed soon after, and freed memory does not move
/// the resident size), and every `heapEvery` whatever happened. `malloc_info` walks every free chunk of every arena holding that arena's lock:
/// 35–90 ms with 0.7 GiB of fragmented free memory (what a replica of 16,667 streams holds, given
/// back but still in the arenas' lists), a stall of every allocation in the process. Read every 5 s
/// it put a replica of the 100,000-stream run inside such a stall 1–2 % of the time: the reply p99
/// (issue 62, `bench/RESULTS.md`); every minute, it still did on a busy machine. A replica whose
/// memory holds still reads the heap once per `heapEvery`.
struct HeapTrimPolicy: Sendable {
    /// What a reading of the process's memory takes in.
    enum Reading: Sendable, Equatable {
        /// The resident size only (cheap).
        case resident
        /// The heap's figures too (`malloc_info`: a pass over the heap).
        case heap
    }

    /// Why a trim is due.
    enum Reason: String, Sendable {
        /// A burst of openings is over, or settled.
        case burst
        /// The heap holds free memory it did not hold after the last trim.
        case held
    }

    /// Openings since the last trim that make a burst.
    let burst: Int
    /// How long no stream may have opened before the burst counts as over (uptime nanoseconds).
    let quiet: UInt64
    /// How long after its last opening a burst is trimmed again.
    let settled: UInt64
    private var openedSinceTrim = 0
    private var lastOpening: UInt64 = 0
    /// The burst was trimmed once, the second trim is to come.
    private var trimmedOnce = false
    /// Growth of the memory resident and not in use by the heap that is given back whatever the
    /// openings do (bytes; a quarter of the heap in use when that is more).
    let held: Int
    /// The least time between two trims for `held` (uptime nanoseconds).
    let spacing: UInt64
    /// How often the process's resident size is read (uptime nanoseconds).
    let readEvery: UInt64
    /// How often the heap's figures are read with it, at most (uptime nanoseconds).
    let heapEvery: UInt64
    private var lastHeapReading: UInt64?
    /// The resident size when the heap's figures were last read.
    private var residentAtHeapReading: Int?
    /// How long after a move of the resident size, or a trim, the heap's figures are read again.
    let followUp: UInt64
    /// When the heap's figures are to be read again before `heapEvery` (uptime nanoseconds).
    private var followUpAt: UInt64?
    /// `ProcessMemory.notInUse` after the last trim, or at the first reading.
    private var notInUseAfterTrim: Int?
    private var lastTrim: UInt64?
    private var lastReading: UInt64?

    init(
        burst: Int = 1_000, quiet: Duration = .seconds(5), settled: Duration = .seconds(60), held: Int = 32 << 20,
        spacing: Duration = .seconds(15), readEvery: Duration = .seconds(5), heapEvery: Duration = .seconds(600),
        followUp: Duration = .seconds(60)
    ) {
        self.followUp = Self.nanoseconds(followUp)
        self.heapEvery = Self.nanoseconds(heapEvery)
        self.burst = burst
        self.quiet = Self.nanoseconds(quiet)
        self.settled = Self.nanoseconds(settled)
        self.held = held
        self.spacing = Self.nanoseconds(spacing)
        self.readEvery = Self.nanoseconds(readEvery)
    }

    /// Whether the process's memory is to be read at `now` (for the gauges and `trimDue`), and
    /// how much of it: nil when none is due.
    mutating func readingDue(at now: UInt64) -> Reading? {
        if let lastReading, now < lastReading + readEvery { return nil }
        lastReading = now
        let periodic = lastHeapReading.map { now >= $0 + heapEvery } ?? true
        let followingUp = followUpAt.map { now >= $0 } ?? false
        guard periodic || followingUp else { return .resident }
        lastHeapReading = now
        followUpAt = nil
        return .heap
    }

    /// Whether a reading of the resident size only (`readingDue` said `.resident`) is to be taken
    /// again with the heap's figures: the resident size moved by `held` or more since they were
    /// last read. Counts as the heap's reading when it says so.
    mutating func heapDue(at now: UInt64, resident: Int) -> Bool {
        guard let residentAtHeapReading, abs(resident - residentAtHeapReading) >= held else { return false }
        lastHeapReading = now
        followUpAt = min(followUpAt ?? .max, now + followUp)
        return true
    }

    /// Whether to trim at `now`, and why: the burst's timers first, then `memory` (a fresh
    /// reading, nil when none was taken; without the heap's figures it decides nothing) against
    /// the level after the last trim.
    mutating func trimDue(at now: UInt64, memory: ProcessMemory?) -> Reason? {
        if let memory, memory.heapInUse != nil { residentAtHeapReading = memory.resident }
        if trimDue(at: now) { return .burst }
        guard let memory, let inUse = memory.heapInUse else { return nil }
        guard let floor = notInUseAfterTrim else {
            notInUseAfterTrim = memory.notInUse
            return nil
        }
        guard memory.notInUse - floor > max(held, inUse / 4) else { return nil }
        if let lastTrim, now < lastTrim + spacing {
            // Due, but too soon after the last: read again once the spacing has passed.
            followUpAt = min(followUpAt ?? .max, lastTrim + spacing)
            return nil
        }
        return .held
    }

    /// A trim was made at `now`; `memory` is a reading taken after it (nil when none was).
    mutating func trimmed(at now: UInt64, leaving memory: ProcessMemory?) {
        lastTrim = now
        followUpAt = now + followUp
        if let memory, memory.heapInUse != nil {
            notInUseAfterTrim = memory.notInUse
            residentAtHeapReading = memory.resident
        }
    }

    /// A stream opened at `now`.
    mutating func opened(at now: UInt64) {
        openedSinceTrim += 1
        lastOpening = now
    }

    /// Whether a burst's trim is due at `now`.
    mutating func trimDue(at now: UInt64) -> Bool {
        guard now >= lastOpening else { return false }
        let idle = now - lastOpening
        if openedSinceTrim >= burst, idle >= quiet {
            openedSinceTrim = 0
            trimmedOnce = true
            return true
        }
        if trimmedOnce, idle >= settled {
            trimmedOnce = false
            return true
        }
        return false
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// Gives the C heap's free memory back to the system (glibc's `malloc_trim`, looked up at run
/// time: other C libraries have none, and nothing happens there). Returns whether any was.
@discardableResult
func trimHeap() -> Bool {
    #if canImport(Glibc)
    typealias Trim = @convention(c) (Int) -> Int32
    guard let symbol = dlsym(nil, "malloc_trim") else { return false }
    return unsafeBitCast(symbol, to: Trim.self)(0) == 1
    #else
    return false
    #endif
}
