import Testing
@testable import ThreadDeskServer

@Suite("Keep-alive rounds")
struct KeepAliveRoundsTests {
    /// 17,000 streams at a 5 s interval: a tick every 100 ms writes a fiftieth of them, and every
    /// stream gets exactly one keep-alive per interval.
    @Test func manyStreamsAreSpreadOverTheIntervalOncePerInterval() throws {
        var rounds = KeepAliveRounds(keepAlive: .seconds(5), writeTimeout: .seconds(30), maxDuration: .seconds(3600))
        #expect(rounds.slots == 50)
        #expect(rounds.tick == .milliseconds(100))
        let streams: [UInt64] = Array(1...17_000)
        var kept = [UInt64: Int]()
        var largest = 0
        for _ in 0..<50 {
            let next = rounds.advance()
            let slot = try #require(next, "a slot at every tick")
            let due = streams.filter { rounds.isDue($0, in: slot) }
            largest = max(largest, due.count)
            for id in due { kept[id, default: 0] += 1 }
        }
        #expect(kept.count == streams.count && kept.values.allSatisfy { $0 == 1 })
        #expect(largest == 340)
    }

    /// Every stream is looked at about once a second for a stalled write or a lifetime over (the
    /// keep-alives take one slot's streams a tick); sooner when the write timeout is short.
    @Test func everyStreamIsLookedAtAboutOnceASecond() {
        var rounds = KeepAliveRounds(keepAlive: .seconds(20), writeTimeout: .seconds(30), maxDuration: .seconds(3600))
        #expect(rounds.tick == .milliseconds(400) && rounds.sweepTicks == 2)
        #expect((1...10).map { _ in rounds.sweepDue() } == Array(repeating: [false, true], count: 5).flatMap { $0 })
        let short = KeepAliveRounds(keepAlive: .milliseconds(100), writeTimeout: .milliseconds(500), maxDuration: .seconds(3600))
        #expect(short.tick == .milliseconds(100) && short.sweepTicks == 1)
    }

    /// A short interval (tests, 100 ms) keeps one slot: every stream at every tick, as before.
    @Test func aShortIntervalIsOneSlot() {
        var rounds = KeepAliveRounds(keepAlive: .milliseconds(100), writeTimeout: .milliseconds(500), maxDuration: .seconds(3600))
        #expect(rounds.slots == 1 && rounds.tick == .milliseconds(100))
        for _ in 0..<3 {
            let slot = rounds.advance()
            #expect(slot == 0)
        }
        #expect(rounds.isDue(7, in: 0))
    }

    /// Stall checks may need ticks shorter than a slot: the slots still turn once per interval.
    @Test func ticksShorterThanASlotStillTurnTheSlotsOncePerInterval() {
        var rounds = KeepAliveRounds(keepAlive: .seconds(1), writeTimeout: .milliseconds(60), maxDuration: .seconds(3600))
        #expect(rounds.slots == 10 && rounds.tick == .milliseconds(30))
        // 10 slots of 100 ms, ticks of 30 ms: a slot every 3 or 4 ticks, the remainder carried over,
        // so 3 s of ticks turn all the slots exactly three times (never more than half a tick late).
        var turned: [(tick: Int, slot: Int)] = []
        for tick in 1...100 {
            if let slot = rounds.advance() { turned.append((tick, slot)) }
        }
        #expect(turned.map(\.slot) == Array(repeating: Array(1..<10) + [0], count: 3).flatMap { $0 })
        #expect(turned.map(\.tick).prefix(4) == [3, 7, 10, 13])
        #expect(turned.last?.tick == 100)
    }
}

@Suite("Heap trim after a burst of openings")
struct HeapTrimPolicyTests {
    private static let second: UInt64 = 1_000_000_000

    /// Trimmed once a burst is over (no opening for the quiet time) and once more when it has
    /// settled, never during it, and not again until another burst.
    @Test func onceABurstIsOverAndOnlyThen() {
        var policy = HeapTrimPolicy(burst: 3, quiet: .seconds(5), settled: .seconds(60))
        let start: UInt64 = 100 * Self.second
        func due(after seconds: UInt64) -> Bool { policy.trimDue(at: start + seconds * Self.second) }
        for offset in 0..<3 { policy.opened(at: start + UInt64(offset) * Self.second) }
        // The last opening was 2 s in.
        let checks = [due(after: 6), due(after: 7), due(after: 30), due(after: 62), due(after: 63)]
        #expect(checks == [false, true, false, true, false])
        // Two more openings are no burst; a third is.
        policy.opened(at: start + 61 * Self.second)
        policy.opened(at: start + 62 * Self.second)
        let beforeThird = due(after: 120)
        policy.opened(at: start + 121 * Self.second)
        let afterThird = [due(after: 125), due(after: 126), due(after: 181), due(after: 500)]
        #expect(!beforeThird)
        #expect(afterThird == [false, true, true, false])
    }
}
