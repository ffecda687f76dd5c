#if canImport(Glibc)
import Glibc
#endif

/// When to give the C heap's free memory back to the system: once a burst of stream openings is
/// over. Opening thousands of streams at once (a deploy, a network blip) reads the store for each
/// at the same time; glibc keeps the pages those reads freed in its arenas, so a replica that
/// opened 15,000 streams in a burst held 1 GiB where its streams and caches needed 0.3
/// (`bench/RESULTS.md`). Trimming after the burst, not during it, costs a pass over the heap or
/// two per burst: one when the openings stop, one when the work they left behind (each token's
/// first-use note, written a few at a time) is surely done.
struct HeapTrimPolicy: Sendable {
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

    init(burst: Int = 1_000, quiet: Duration = .seconds(5), settled: Duration = .seconds(60)) {
        self.burst = burst
        self.quiet = Self.nanoseconds(quiet)
        self.settled = Self.nanoseconds(settled)
    }

    /// A stream opened at `now`.
    mutating func opened(at now: UInt64) {
        openedSinceTrim += 1
        lastOpening = now
    }

    /// Whether to trim at `now`.
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
