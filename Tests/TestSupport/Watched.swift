import Deadlines
import Synchronization

/// A value that tests wait on: every change wakes the waiters, each checks its condition again,
/// and a wait that outlasts its deadline throws `WaitTimedOut`. Nothing polls; a waiter cancelled
/// or timed out leaves the others working (each has a wake-up signal of its own).
public final class Watched<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var value: Value
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: WakeSignal] = [:]
    }

    private let state: Mutex<State>

    public init(_ value: Value) { state = Mutex(State(value: value)) }

    public var value: Value { state.withLock { $0.value } }

    /// Changes the value and wakes every waiter.
    @discardableResult
    public func update<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        let (result, waiters) = try state.withLock { state in
            (try body(&state.value), Array(state.waiters.values))
        }
        for waiter in waiters { waiter.signal() }
        return result
    }

    /// Returns once `condition` holds for the value; throws `WaitTimedOut` naming `what` (and the
    /// value then) when `timeout` passes first. The timeout only bounds a broken test: generous.
    public func wait(
        for what: @autoclosure () -> String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
        until condition: (Value) -> Bool
    ) async throws {
        let signal = WakeSignal()
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            state.waiters[state.nextWaiter] = signal
            return state.nextWaiter
        }
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: id) } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition(value) {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw WaitTimedOut(what: "\(what()) (value: \(value))", timeout: timeout) }
            _ = await signal.wait(upTo: left)
            try Task.checkCancellation()
        }
    }
}
