import Testing
import TestSupport
@testable import ThreadDeskServer

/// The heap given back whether or not the machine is quiet (issue 62): a burst's after-work that
/// outlasts the burst's timers still has what it freed trimmed, once the heap holds it.
@Suite("The heap given back as it fills with free memory")
struct LiveMemoryTests {
    private static let second: UInt64 = 1_000_000_000
    private static let mebibyte = 1 << 20

    private static func memory(resident: Int, inUse: Int) -> ProcessMemory {
        ProcessMemory(resident: resident * mebibyte, heapInUse: inUse * mebibyte, heapFree: 0)
    }

    /// No burst of openings at all, yet the heap's free memory grows (the work an earlier burst
    /// left behind, on a machine too busy for it to end within the burst's timers): it is given
    /// back once it grew past the limit since the last trim, and no sooner than the spacing allows.
    @Test func freeMemoryHeldPastTheLimitIsTrimmedWhateverTheOpeningsDo() {
        var policy = HeapTrimPolicy(burst: 1_000, held: 32 * Self.mebibyte, spacing: .seconds(15))
        let start: UInt64 = 100 * Self.second
        func due(after seconds: UInt64, resident: Int, inUse: Int) -> HeapTrimPolicy.Reason? {
            policy.trimDue(at: start + seconds * Self.second, memory: Self.memory(resident: resident, inUse: inUse))
        }
        // The first reading is the level: 60 MiB resident, 20 of them the heap's.
        #expect(due(after: 0, resident: 60, inUse: 20) == nil)
        // 30 MiB more held and not in use: under the limit.
        #expect(due(after: 5, resident: 150, inUse: 80) == nil)
        // 40 MiB beyond the heap in use: over it.
        #expect(due(after: 10, resident: 180, inUse: 100) == .held)
        policy.trimmed(at: start + 10 * Self.second, leaving: Self.memory(resident: 110, inUse: 100))
        // Held again soon after: the spacing keeps the next trim 15 s away.
        #expect(due(after: 20, resident: 160, inUse: 100) == nil)
        #expect(due(after: 25, resident: 160, inUse: 100) == .held)
        // A trim that could not give much back is the new level: no trim again for what it kept.
        policy.trimmed(at: start + 25 * Self.second, leaving: Self.memory(resident: 150, inUse: 100))
        #expect(due(after: 60, resident: 150, inUse: 100) == nil)
        #expect(due(after: 120, resident: 160, inUse: 100) == nil)
    }

    /// A large heap tolerates a quarter of what it uses before the free memory counts as held.
    @Test func aLargeHeapTrimsPastAQuarterOfWhatItUses() {
        var policy = HeapTrimPolicy(held: 32 * Self.mebibyte, spacing: .seconds(15))
        #expect(policy.trimDue(at: 0, memory: Self.memory(resident: 400, inUse: 360)) == nil)
        // 80 MiB more not in use, a quarter of 400 is 100: kept.
        #expect(policy.trimDue(at: 20 * Self.second, memory: Self.memory(resident: 520, inUse: 400)) == nil)
        #expect(policy.trimDue(at: 25 * Self.second, memory: Self.memory(resident: 550, inUse: 400)) == .held)
    }

    /// Where the C library says nothing of its heap, only the burst's timers trim.
    @Test func withoutTheHeapsFiguresOnlyTheBurstTrims() {
        var policy = HeapTrimPolicy(burst: 2, quiet: .seconds(5), settled: .seconds(60))
        let grown = ProcessMemory(resident: 900 * Self.mebibyte, heapInUse: nil, heapFree: nil)
        #expect(policy.trimDue(at: 0, memory: ProcessMemory(resident: 60 * Self.mebibyte, heapInUse: nil, heapFree: nil)) == nil)
        #expect(policy.trimDue(at: 30 * Self.second, memory: grown) == nil)
        policy.opened(at: 31 * Self.second)
        policy.opened(at: 32 * Self.second)
        #expect(policy.trimDue(at: 37 * Self.second, memory: grown) == .burst)
    }

    /// The resident size is read every few seconds, not at every sweep; the heap's figures (a pass
    /// over the heap under its locks) once a minute at most.
    @Test func theResidentSizeIsReadEveryFewSecondsAndTheHeapOnceAMinute() {
        var policy = HeapTrimPolicy(readEvery: .seconds(5), heapEvery: .seconds(60))
        let readings = [0, 1, 4, 5, 6, 10, 55, 60, 61, 65, 119, 120, 125].map { policy.readingDue(at: UInt64($0) * Self.second) }
        #expect(readings == [.heap, nil, nil, .resident, nil, .resident, .resident, .heap, nil, .resident, .resident, nil, .heap])
    }

    /// Between two of those, the heap's figures are read when the resident size moved by `held`
    /// since they were last read: memory held after work grows the resident size first. A replica
    /// whose memory holds still reads no heap (no stall of its allocations).
    @Test func theHeapIsReadWhenTheResidentSizeMovedByHeld() {
        var policy = HeapTrimPolicy(held: 32 * Self.mebibyte, readEvery: .seconds(5), heapEvery: .seconds(600))
        let first = policy.readingDue(at: 0)
        let firstTrim = policy.trimDue(at: 0, memory: Self.memory(resident: 300, inUse: 140))
        let next = policy.readingDue(at: 5 * Self.second)
        #expect(first == .heap && firstTrim == nil && next == .resident)
        // Still: 20 MiB up, then back; then 40 MiB up: read now, and the level moves with the
        // reading (10 more is no move); then down by 40 from there (streams gone) is one too.
        var due: [Bool] = []
        for (second, resident) in [(5, 320), (10, 300), (15, 340)] {
            due.append(policy.heapDue(at: UInt64(second) * Self.second, resident: resident * Self.mebibyte))
        }
        let afterMove = policy.trimDue(at: 15 * Self.second, memory: Self.memory(resident: 340, inUse: 180))
        for (second, resident) in [(20, 350), (25, 300)] {
            due.append(policy.heapDue(at: UInt64(second) * Self.second, resident: resident * Self.mebibyte))
        }
        #expect(due == [false, false, true, false, true])
        #expect(afterMove == nil)
    }

    /// Memory in use when the resident size moved is often freed soon after, and freed memory
    /// does not move the resident size: the heap is read again a minute after the move, and what
    /// was freed meanwhile is given back then, not at the ten-minute reading.
    @Test func memoryFreedAfterAMoveIsFoundAtTheFollowUp() {
        var policy = HeapTrimPolicy(held: 32 * Self.mebibyte, spacing: .seconds(15), readEvery: .seconds(5), heapEvery: .seconds(600), followUp: .seconds(60))
        let first = policy.readingDue(at: 0)
        let firstTrim = policy.trimDue(at: 0, memory: Self.memory(resident: 300, inUse: 140))
        let movedReading = policy.readingDue(at: 5 * Self.second)
        let moved = policy.heapDue(at: 5 * Self.second, resident: 340 * Self.mebibyte)
        // In use grew with it: nothing held yet.
        let movedTrim = policy.trimDue(at: 5 * Self.second, memory: Self.memory(resident: 340, inUse: 180))
        #expect(first == .heap && firstTrim == nil && movedReading == .resident && moved && movedTrim == nil)
        // Then 100 MiB in use is freed, the resident size flat: no move, the resident size only.
        var between: [HeapTrimPolicy.Reading?] = []
        var movesBetween: [Bool] = []
        for second in stride(from: 10, through: 60, by: 5) {
            between.append(policy.readingDue(at: UInt64(second) * Self.second))
            movesBetween.append(policy.heapDue(at: UInt64(second) * Self.second, resident: 340 * Self.mebibyte))
        }
        #expect(between.allSatisfy { $0 == .resident } && !movesBetween.contains(true))
        let followUp = policy.readingDue(at: 65 * Self.second)
        let trim = policy.trimDue(at: 65 * Self.second, memory: Self.memory(resident: 340, inUse: 80))
        #expect(followUp == .heap)
        #expect(trim == .held)
    }

    /// Held memory found too soon after the last trim is read again as soon as the spacing has
    /// passed, not at the next move or the ten-minute reading.
    @Test func aHeldTrimTheSpacingHeldBackIsLookedAtOnceItPassed() {
        var policy = HeapTrimPolicy(held: 32 * Self.mebibyte, spacing: .seconds(15), readEvery: .seconds(5), heapEvery: .seconds(600), followUp: .seconds(60))
        _ = policy.readingDue(at: 0)
        _ = policy.trimDue(at: 0, memory: Self.memory(resident: 300, inUse: 140))
        policy.trimmed(at: 0, leaving: Self.memory(resident: 200, inUse: 140))
        _ = policy.readingDue(at: 5 * Self.second)
        let moved = policy.heapDue(at: 5 * Self.second, resident: 300 * Self.mebibyte)
        let tooSoon = policy.trimDue(at: 5 * Self.second, memory: Self.memory(resident: 300, inUse: 140))
        let atTen = policy.readingDue(at: 10 * Self.second)
        let atFifteen = policy.readingDue(at: 15 * Self.second)
        let trim = policy.trimDue(at: 15 * Self.second, memory: Self.memory(resident: 300, inUse: 140))
        #expect(moved && tooSoon == nil)
        #expect(atTen == .resident && atFifteen == .heap)
        #expect(trim == .held)
    }

    /// A reading of the resident size alone decides no trim for held memory: only the heap's
    /// figures tell free memory from memory in use.
    @Test func aResidentReadingAloneTrimsNothingForHeldMemory() {
        var policy = HeapTrimPolicy(held: 32 * Self.mebibyte, spacing: .seconds(15))
        #expect(policy.trimDue(at: 0, memory: Self.memory(resident: 60, inUse: 20)) == nil)
        let grown = ProcessMemory(resident: 900 * Self.mebibyte, heapInUse: nil, heapFree: nil)
        #expect(policy.trimDue(at: 30 * Self.second, memory: grown) == nil)
        #expect(policy.trimDue(at: 60 * Self.second, memory: Self.memory(resident: 900, inUse: 100)) == .held)
    }

    /// The whole heap's totals are the ones after the last arena's (glibc's `malloc_info`).
    @Test func theHeapsTotalsAreReadFromMallocInfo() throws {
        let document = """
            <malloc version="1">
            <heap nr="0">
            <total type="fast" count="0" size="0"/>
            <total type="rest" count="3" size="1000"/>
            <system type="current" size="5000"/>
            </heap>
            <heap nr="1">
            <total type="fast" count="0" size="0"/>
            <total type="rest" count="1" size="500"/>
            <system type="current" size="2000"/>
            </heap>
            <total type="fast" count="2" size="96"/>
            <total type="rest" count="494" size="566013"/>
            <total type="mmap" count="1" size="200000"/>
            <system type="current" size="1081344"/>
            <system type="max" size="1081344"/>
            </malloc>
            """
        let totals = try #require(ProcessMemory.heapTotals(document))
        #expect(totals.free == 566_109)
        #expect(totals.inUse == 1_081_344 - 566_109 + 200_000)
    }

    /// With a stream open, the hub's sweep (on the server's clock, which the test moves) reads the
    /// process's memory into `/metrics`: what a benchmark compares with the RSS it reads itself.
    @Test func theServerReportsItsMemoryAndWhatAnOpenStreamCostsIt() async throws {
        let clock = ManualClock()
        let keepAlive = Duration.milliseconds(100)
        try await withServer(time: .driven(by: clock), { $0.live.keepAlive = keepAlive }) { server in
            let user = try await server.session()
            let stream = try await LiveTests.stream(server, user.token)
            defer { stream.close() }
            try await server.openStreams(1)
            try await server.passingTicks(of: keepAlive, on: clock) {
                try await eventually("the process's memory in /metrics") { try await server.metric("threaddesk_process_resident_bytes") > 0 }
            }
            let text = try await server.metricsText()
            #expect(text.contains("\nthreaddesk_live_bytes_per_stream "))
            #if os(Linux)
            #expect(try await server.metric("threaddesk_heap_in_use_bytes") > 0)
            #endif
        }
    }

    /// This process's own figures, where `/proc` and glibc give them.
    @Test func theProcessReadsItsOwnMemory() throws {
        #if os(Linux)
        let memory = try #require(ProcessMemory.current())
        #expect(memory.resident > 0)
        let inUse = try #require(memory.heapInUse)
        #expect(inUse > 0 && inUse < memory.resident * 4)
        #endif
    }
}
