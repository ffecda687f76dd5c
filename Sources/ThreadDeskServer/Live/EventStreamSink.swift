import NIOCore

/// The thread-safe face of an `EventStreamHandler`: what the hub calls, from any thread.
struct EventStreamSink: Sendable {
    let eventLoop: any EventLoop
    let handler: NIOLoopBound<EventStreamHandler>

    func deliver(_ signal: LiveSignal) { eventLoop.execute { [handler] in handler.value.receive(signal) } }
    func finish() { eventLoop.execute { [handler] in handler.value.end(.finished) } }
    func close() { eventLoop.execute { [handler] in handler.value.end(.closed) } }

    /// A keep-alive for each of `sinks`: one job per event loop, not one per stream.
    static func keepAlive(_ sinks: [EventStreamSink]) {
        onEachLoop(sinks) { $0.receive(.keepAlive) }
    }

    /// Ends each of `sinks` at the stop, in jobs of `batch` per event loop: a loop ending
    /// thousands of streams still takes the closes' completions and its other work in between.
    static func stop(_ sinks: [EventStreamSink], batch: Int = 1_024) {
        onEachLoop(sinks, batch: batch) { $0.end(.stopped) }
    }

    private static func onEachLoop(_ sinks: [EventStreamSink], batch: Int = .max, _ body: @escaping @Sendable (EventStreamHandler) -> Void) {
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, handlers: [NIOLoopBound<EventStreamHandler>])] = [:]
        for sink in sinks { byLoop[ObjectIdentifier(sink.eventLoop), default: (sink.eventLoop, [])].handlers.append(sink.handler) }
        for (loop, handlers) in byLoop.values {
            for start in stride(from: 0, to: handlers.count, by: batch) {
                let slice = handlers[start..<min(handlers.count, start + batch)]
                loop.execute {
                    for handler in slice { body(handler.value) }
                }
            }
        }
    }
}
