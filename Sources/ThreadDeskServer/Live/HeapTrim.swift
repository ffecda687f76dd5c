#if canImport(Glibc)
import Glibc
#endif

/// When to give the C heap's free memory back to the system: once a burst of stream openings is
/// over. Opening thousands of streams at once (a deploy, a network blip) reads the store for each
/// at the same time; glibc keeps the pages those reads freed in its arenas, so a replica that
/// opened 15,000 streams in a burst held 1 GiB where its streams and caches needed 0.3
/// (`bench/RESULTS.md`). Trimming after the burst, not during it, costs one pass over the heap
/// per burst.
struct HeapTrimPolicy: Sendable {
    /// Openings since the last trim that make a burst.
    let burst: Int
    /// How long no stream may have opened before the burst counts as over (uptime nanoseconds).
    let quiet: UInt64
    private var openedSinceTrim = 0
    private var lastOpening: UInt64 = 0

    init(burst: Int = 1_000, quiet: Duration = .seconds(5)) {
        self.burst = burst
        let (seconds, attoseconds) = quiet.components
        self.quiet = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    /// A stream opened at `now`.
    mutating func opened(at now: UInt64) {
        openedSinceTrim += 1
        lastOpening = now
    }

    /// Whether to trim at `now` (and, if so, counts from zero again).
    mutating func trimDue(at now: UInt64) -> Bool {
        guard openedSinceTrim >= burst, now >= lastOpening, now - lastOpening >= quiet else { return false }
        openedSinceTrim = 0
        return true
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
