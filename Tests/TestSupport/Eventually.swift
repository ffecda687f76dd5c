import NIOCore
import NIOPosix

/// A condition a test waited for did not come true in time.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    public init(what: String, timeout: Duration) {
        self.what = what
        self.timeout = timeout
    }
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Polls `condition` until it holds; throws `WaitTimedOut` (failing the test, naming `what`)
/// when `timeout` passes first. Only for another process's state (a daemon, PostgreSQL, a peer
/// on the network), which nothing here can announce: the server's own work is awaited with its
/// settled signal, and in-process state with `Watched`. The default is generous: it bounds a
/// broken test, while a working one on a machine busy with the rest of the suite still makes it.
public func eventually(
    _ what: String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, timeout: timeout) }
        try await pollPause()
    }
}

/// The pause between two looks at another process's state: a timer on an event loop.
private func pollPause() async throws {
    try await MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .milliseconds(10)) {}.futureResult.get()
}
