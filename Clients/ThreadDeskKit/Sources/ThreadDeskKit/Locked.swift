import Foundation

/// A value read and set from any thread, under a lock: for what must be at hand without an
/// `await` (a MetricKit callback, a synchronous `start`). `Mutex` needs iOS 18.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}
