/// A condition a test waited for did not come true in time.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Polls `condition` until it holds; throws `WaitTimedOut` (failing the test, naming `what`)
/// when `timeout` passes first. The default is generous: it bounds a broken test, while a
/// working one on a machine busy with the rest of the suite still makes it.
public func eventually(
    _ what: String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, timeout: timeout) }
        try await Task.sleep(for: .milliseconds(10))
    }
}
