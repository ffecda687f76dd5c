import NIOCore

/// Whether `stream` yields within `timeout` (false when it finishes or the time passes first).
public func yields(_ stream: AsyncStream<Void>, within timeout: Duration) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in stream { return true }
            return false
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        defer { group.cancelAll() }
        return await group.next() ?? false
    }
}

extension Channel {
    /// Whether the connection is closed (by either side) within `timeout`.
    public func closes(within timeout: Duration) async -> Bool {
        let (closed, signal) = AsyncStream.makeStream(of: Void.self)
        closeFuture.whenComplete { _ in signal.yield() }
        return await yields(closed, within: timeout)
    }
}
