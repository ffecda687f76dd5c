import Prometheus

/// What the process holds in memory, and what an open event stream costs of it: the process's own
/// report beside what a benchmark reads from `/proc` (issue 62). Set every few seconds while
/// streams are open (`LiveHub`'s sweep).
extension ServerMetrics {
    /// A reading of the process's memory: resident bytes, the C heap's bytes in use and free
    /// (nil where the C library does not say), and the resident bytes above those of the last
    /// moment no stream was open, per open stream (0 with none open).
    func memory(resident: Int, heapInUse: Int?, heapFree: Int?, perStream: Double) {
        registry.gauge("threaddesk_process_resident_bytes", help: "Resident memory of the process (RSS)").set(to: Double(resident))
        if let heapInUse {
            registry.gauge("threaddesk_heap_in_use_bytes", help: "C heap bytes in use (glibc malloc_info)").set(to: Double(heapInUse))
        }
        if let heapFree {
            registry.gauge(
                "threaddesk_heap_free_bytes", help: "C heap bytes free in its arenas, resident or given back (glibc malloc_info)"
            ).set(to: Double(heapFree))
        }
        registry.gauge(
            "threaddesk_live_bytes_per_stream",
            help: "Resident bytes above those of the last moment no /v1/events stream was open, per open stream (0 with none open)"
        ).set(to: perStream)
    }

    /// The heap's free memory was given back to the system: `burst` (a burst of openings is over)
    /// or `held` (the heap held much more free memory than after the last trim).
    func heapTrimmed(reason: String) {
        registry.counter("threaddesk_heap_trims_total", labels: [("reason", reason)], help: "Free C heap memory given back to the system, by reason")
            .increment()
    }
}
