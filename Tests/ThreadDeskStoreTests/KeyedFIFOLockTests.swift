import Deadlines
import TestSupport
import Testing
import ThreadDeskStore

@Suite("Keyed FIFO lock", .timeLimit(.minutes(1)))
struct KeyedFIFOLockTests {
    /// Holds `key` until the returned stream's continuation is told to let go.
    static func hold(_ lock: KeyedFIFOLock<String>, _ key: String, in group: inout ThrowingTaskGroup<Void, any Error>) async throws
        -> AsyncStream<Void>.Continuation
    {
        let (release, open) = AsyncStream.makeStream(of: Void.self)
        let (held, heldSignal) = AsyncStream.makeStream(of: Void.self)
        group.addTask {
            try await lock.withLock(key) {
                heldSignal.yield()
                for await _ in release { break }
            }
        }
        for await _ in held { break }
        return open
    }

    @Test func waitersAreServedInArrivalOrder() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(observer: { changes.update { $0 += 1 } })
        let order = Locked<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let open = try await Self.hold(lock, "k", in: &group)
            // Each waiter is started only once the previous one is queued, so arrival order is known.
            for index in 0..<20 {
                group.addTask {
                    try await lock.withLock("k") { order.withLock { $0.append(index) } }
                }
                try await changes.wait(for: "waiter \(index) queued") { _ in lock.waiting(for: "k") == index + 1 }
            }
            open.yield()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == Array(0..<20))
        #expect(lock.activeKeys == 0)
    }

    /// With `holders: 3` the key is a counting semaphore: three hold it at once, the fourth and
    /// later queue in arrival order, and each release hands a place to the oldest waiter.
    @Test func severalHoldersRunAtOnceAndTheRestQueueInOrder() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(holders: 3, observer: { changes.update { $0 += 1 } })
        let order = Locked<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            var holders: [AsyncStream<Void>.Continuation] = []
            for _ in 0..<3 { holders.append(try await Self.hold(lock, "k", in: &group)) }
            #expect(lock.holding("k") == 3)
            #expect(lock.waiting(for: "k") == 0)
            for index in 0..<5 {
                group.addTask { try await lock.withLock("k") { order.withLock { $0.append(index) } } }
                try await changes.wait(for: "waiter \(index) queued") { _ in lock.waiting(for: "k") == index + 1 }
            }
            // One place freed: the waiters pass through it one after another, oldest first.
            holders[0].yield()
            try await changes.wait(for: "every waiter served") { _ in order.withLock { $0.count } == 5 }
            #expect(lock.holding("k") == 2)
            // A place is free: the next one holds at once, beside the two still holding.
            let inside = try await lock.withLock("k") { lock.holding("k") }
            #expect(inside == 3)
            holders[1].yield()
            holders[2].yield()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == Array(0..<5))
        #expect(lock.activeKeys == 0)
        #expect(lock.holding("k") == 0)
    }

    @Test func aWaiterGivesUpAtItsDeadlineAndLeavesTheQueue() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(defaultTimeout: .milliseconds(200), observer: { changes.update { $0 += 1 } })
        let order = Locked<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let open = try await Self.hold(lock, "k", in: &group)
            let started = ContinuousClock.now
            await #expect(throws: DeadlineExceeded.self) {
                try await lock.withLock("k") { order.withLock { $0.append("timed out") } }
            }
            #expect(started.duration(to: .now) < .seconds(5))
            #expect(lock.waiting(for: "k") == 0)
            group.addTask { try await lock.withLock("k") { order.withLock { $0.append("next") } } }
            try await changes.wait(for: "the next waiter queued") { _ in lock.waiting(for: "k") == 1 }
            open.yield()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == ["next"])
        #expect(lock.activeKeys == 0)
    }

    @Test func aCallersSoonerDeadlineWinsOverTheLocksDefault() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(defaultTimeout: .seconds(60), observer: { changes.update { $0 += 1 } })
        try await withThrowingTaskGroup(of: Void.self) { group in
            let open = try await Self.hold(lock, "k", in: &group)
            let started = ContinuousClock.now
            await #expect(throws: DeadlineExceeded.self) {
                try await Deadline.within(.milliseconds(100)) { try await lock.withLock("k") {} }
            }
            #expect(started.duration(to: .now) < .seconds(30), "waited for the lock's default, not the caller's deadline")
            #expect(lock.waiting(for: "k") == 0)
            open.yield()
            try await group.waitForAll()
        }
    }

    @Test func aCancelledWaiterLeavesAtOnceAndTheOthersKeepTheirPlace() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(observer: { changes.update { $0 += 1 } })
        let order = Locked<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let open = try await Self.hold(lock, "k", in: &group)
            group.addTask { try await lock.withLock("k") { order.withLock { $0.append(1) } } }
            try await changes.wait(for: "the first waiter queued") { _ in lock.waiting(for: "k") == 1 }
            let cancelled = Task { try await lock.withLock("k") { order.withLock { $0.append(2) } } }
            try await changes.wait(for: "the second waiter queued") { _ in lock.waiting(for: "k") == 2 }
            group.addTask { try await lock.withLock("k") { order.withLock { $0.append(3) } } }
            try await changes.wait(for: "the third waiter queued") { _ in lock.waiting(for: "k") == 3 }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            #expect(lock.waiting(for: "k") == 2)
            open.yield()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == [1, 3])
        #expect(lock.activeKeys == 0)
    }

    @Test func anAlreadyCancelledTaskDoesNotQueue() async throws {
        let changes = Watched(0)
        let lock = KeyedFIFOLock<String>(observer: { changes.update { $0 += 1 } })
        try await withThrowingTaskGroup(of: Void.self) { group in
            let open = try await Self.hold(lock, "k", in: &group)
            let (go, start) = AsyncStream.makeStream(of: Void.self)
            let late = Task {
                for await _ in go { break }
                try await lock.withLock("k") {}
            }
            late.cancel()
            start.yield()
            await #expect(throws: CancellationError.self) { try await late.value }
            #expect(lock.waiting(for: "k") == 0)
            open.yield()
            try await group.waitForAll()
        }
        #expect(lock.activeKeys == 0)
    }
}
