
import Testing
import ThreadDeskStore

@Suite("Keyed FIFO lock")
struct KeyedFIFOLockTests {
    @Test func waitersAreServedInArrivalOrder() async throws {
        let lock = KeyedFIFOLock<String>()
        let order = Locked<[Int]>([])
        let (release, open) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (held, heldSignal) = AsyncStream.makeStream(of: Void.self)
            group.addTask {
                await lock.withLock("k") {
                    heldSignal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in held { break }
            // Each waiter is started only once the previous one is queued, so arrival order is known.
            for index in 0..<20 {
                group.addTask {
                    await lock.withLock("k") { order.withLock { $0.append(index) } }
                }
                while lock.waiting(for: "k") < index + 1 { try await Task.sleep(for: .milliseconds(1)) }
            }
            open.yield()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == Array(0..<20))
        #expect(lock.activeKeys == 0)
    }
}
