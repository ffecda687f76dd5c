import Deadlines
import TestSupport
import Testing

/// The wake-up every idle loop sleeps on. An `AsyncStream` iterated inside a timeout is finished
/// for good once the timeout cancels it, and every later wait returns at once: the loop spins.
@Suite("WakeSignal", .timeLimit(.minutes(1)))
struct WakeSignalTests {
    /// A signal whose waits in progress a test can await.
    static func watchedSignal() -> (WakeSignal, Watched<Int>) {
        let waits = Watched(0)
        return (WakeSignal { count in waits.update { $0 = count } }, waits)
    }

    @Test func aWaitThatTimedOutLeavesTheSignalWorking() async throws {
        let (signal, waits) = Self.watchedSignal()
        #expect(await signal.wait(upTo: .milliseconds(5)) == false)
        #expect(await signal.wait(upTo: .milliseconds(5)) == false)
        // Still a signal: the next wait sleeps until it is woken, and is woken.
        let waiting = Task { await signal.wait(upTo: .seconds(30)) }
        try await waits.wait(for: "the wait began") { $0 == 1 }
        signal.signal()
        #expect(await waiting.value == true)
    }

    @Test func aCancelledWaitLeavesTheSignalWorkingAndConsumesNothing() async throws {
        let (signal, waits) = Self.watchedSignal()
        let cancelled = Task { await signal.wait() }
        try await waits.wait(for: "the wait began") { $0 == 1 }
        cancelled.cancel()
        #expect(await cancelled.value == false)
        #expect(signal.waiting == 0)
        // A wake-up with nobody waiting is kept for the next wait, once.
        signal.signal()
        signal.signal()
        #expect(await signal.wait(upTo: .seconds(30)) == true)
        #expect(await signal.wait(upTo: .milliseconds(5)) == false)
    }

    @Test func aWaitCancelledBeforeItBeganReturnsAtOnce() async {
        let signal = WakeSignal()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await signal.wait()
        }
        #expect(await task.value == false)
        #expect(signal.waiting == 0)
    }
}
