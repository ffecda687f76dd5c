import NIOCore
import NIOHTTPTypes
import Synchronization

/// How the stream ends: once, from whichever side ends it first (the hub, the token, the client,
/// the server's quiesce, a new request), and the connection's close that only the handler makes.
extension EventStreamHandler {
    /// Ends the stream (once): it leaves the hub, and its connection closes.
    func end(_ ending: Ending) {
        guard !ended else { return }
        ended = true
        stream.subscriber.detach()
        hub.unsubscribe(stream.subscriber)
        guard let context else { return }
        switch ending {
        case .finished, .stopped:
            let promise = context.eventLoop.makePromise(of: Void.self)
            var written = false
            promise.futureResult.assumeIsolated().whenComplete { _ in
                written = true
                context.close(promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
            // Taken at once by the socket (the usual case): closed already, nothing to watch.
            guard !written else { return }
            // A client that stopped reading never takes the last chunk: the hub no longer watches
            // this stream, so its write gets the same time here, or at the stop a moment only (the
            // server's stop must not wait on one client).
            let limit = ending == .stopped ? min(hub.settings.writeTimeout, Self.lastChunkAtStop) : hub.settings.writeTimeout
            lastChunkDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(limit)) {
                context.close(promise: nil)
            }
        case .closed:
            context.close(promise: nil)
        }
    }

    /// How long a stream's last chunk may wait for its client at the stop.
    static let lastChunkAtStop = Duration.seconds(1)

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    // MARK: The pipeline's endings

    func channelInactive(context: ChannelHandlerContext) {
        end(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.closed)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            // The server stops: the stream ends now, so the drain is not held up by it.
            _ = hub.quiesced.compareExchange(expected: 0, desired: max(1, LiveHub.stamp(hub.time.elapsed())), ordering: .relaxed)
            end(.stopped)
        } else if case .inputClosed? = event as? ChannelEvent {
            // The client closed its side (the server allows half-closed connections): it is gone.
            end(.closed)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // The connection's task letting go (its writer's half-close, then its close) is answered
        // without closing, ended or not: the handler closes the whole connection when the stream
        // is over and its last chunk written. Half-closes from that side never go through.
        guard mode == .all, taskLetGo else {
            if mode == .all { taskLetGo = true }
            promise?.succeed(())
            return
        }
        context.close(mode: mode, promise: promise)
    }
}
