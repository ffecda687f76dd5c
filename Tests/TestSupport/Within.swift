import NIOCore
import NIOPosix

/// Whether `stream` yields within `timeout` (false when it finishes or the time passes first).
/// The deadline is a timer on an event loop that settles the outcome (the first to complete it
/// wins; NIO ignores a later completion), not a sleep.
public func yields(_ stream: AsyncStream<Void>, within timeout: Duration) async -> Bool {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let outcome = loop.makePromise(of: Bool.self)
    let timer = loop.scheduleTask(in: TimeAmount(timeout)) { outcome.succeed(false) }
    let reader = Task {
        for await _ in stream {
            outcome.succeed(true)
            return
        }
        outcome.succeed(false)
    }
    let result = (try? await outcome.futureResult.get()) ?? false
    timer.cancel()
    reader.cancel()
    return result
}

extension Channel {
    /// Whether the connection is closed (by either side) within `timeout`: its close future raced
    /// against a timer on its own event loop.
    public func closes(within timeout: Duration) async -> Bool {
        let loop = eventLoop
        let outcome = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: TimeAmount(timeout)) { outcome.succeed(false) }
        closeFuture.whenComplete { _ in outcome.succeed(true) }
        let result = (try? await outcome.futureResult.get()) ?? false
        timer.cancel()
        return result
    }
}
