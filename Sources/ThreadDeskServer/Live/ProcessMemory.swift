import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the process holds in memory, as the system and the C heap see it: what the hub's gauges
/// report and its heap trim decides on. Read from `/proc/self/statm` and glibc's `malloc_info`
/// (looked up at run time: elsewhere only what the system tells is known).
struct ProcessMemory: Sendable, Equatable {
    /// Resident bytes (RSS).
    var resident: Int
    /// Bytes the C heap has handed out and not taken back; nil where the C library does not say.
    var heapInUse: Int?
    /// Bytes of the C heap free in its arenas (resident or given back by a trim).
    var heapFree: Int?

    /// What is resident and not in use by the heap: the program, the stacks and the free heap
    /// pages not yet given back. It grows when a burst frees what it allocated and glibc keeps it.
    var notInUse: Int { resident - (heapInUse ?? 0) }

    /// Now, or nil where `/proc` cannot be read; the heap's figures only when `heap` (a pass over
    /// the heap under its arenas' locks: `HeapTrimPolicy.Reading`).
    static func current(heap readsHeap: Bool = true) -> ProcessMemory? {
        guard let resident = residentBytes() else { return nil }
        let heap = readsHeap ? heapBytes() : nil
        return ProcessMemory(resident: resident, heapInUse: heap?.inUse, heapFree: heap?.free)
    }

    /// The process's resident bytes (`/proc/self/statm`: pages, the second field).
    static func residentBytes() -> Int? {
        #if canImport(Glibc)
        let file = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return nil
        #endif
    }

    /// The C heap's bytes in use and free, from the totals `malloc_info` writes after its arenas'
    /// (`<total type="fast|rest|mmap" size=…>`, `<system type="current" size=…>`).
    static func heapBytes() -> (inUse: Int, free: Int)? {
        #if canImport(Glibc)
        typealias Info = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        guard let symbol = dlsym(nil, "malloc_info") else { return nil }
        var text: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let file = open_memstream(&text, &size) else { return nil }
        let status = unsafeBitCast(symbol, to: Info.self)(0, file)
        fclose(file)
        defer { free(text) }
        guard status == 0, let text else { return nil }
        return heapTotals(String(cString: text))
        #else
        return nil
        #endif
    }

    /// The totals of a `malloc_info` document: the last `<total>` and `<system type="current">`
    /// elements are the whole heap's (each arena's come before them).
    static func heapTotals(_ document: String) -> (inUse: Int, free: Int)? {
        let whole = document.range(of: "</heap>", options: .backwards).map { document[$0.upperBound...] } ?? document[...]
        func size(_ element: String) -> Int? {
            guard let start = whole.range(of: element) else { return nil }
            let rest = whole[start.upperBound...]
            guard let open = rest.range(of: "size=\"") else { return nil }
            return Int(rest[open.upperBound...].prefix { $0.isNumber })
        }
        guard let current = size("<system type=\"current\""), let fast = size("<total type=\"fast\""), let rest = size("<total type=\"rest\"")
        else { return nil }
        let mapped = size("<total type=\"mmap\"") ?? 0
        let free = fast + rest
        return (max(0, current - free) + mapped, free)
    }
}
