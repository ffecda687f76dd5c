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
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, handlers: [NIOLoopBound<EventStreamHandler>])] = [:]
        for sink in sinks { byLoop[ObjectIdentifier(sink.eventLoop), default: (sink.eventLoop, [])].handlers.append(sink.handler) }
        for (loop, handlers) in byLoop.values {
            loop.execute {
                for handler in handlers { handler.value.receive(.keepAlive) }
            }
        }
    }
}
