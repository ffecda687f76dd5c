import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import HummingbirdWebSocket
import NIOCore

/// Closes a connection that has sent nothing: at once when the server begins shutting down, and
/// in any case `timeout` after it opened (as real servers close one that never sends a request).
///
/// Without it the WebSocket-upgrading server waits for the first request head of every accepted
/// connection with no deadline, and never sees the shutdown's quiesce event before that head: a
/// client that connected and then went quiet (a request cancelled while its connection was being
/// made leaves exactly that in AsyncHTTPClient's pool) held the emulator's graceful shutdown, and
/// with it the test, forever.
struct SilentConnectionGuard<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let timeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FirstBytesHandler(timeout: timeout), position: .first)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// The emulator's server: HTTP/1.1 with the gateway's WebSocket upgrade, guarded against
    /// connections that never speak.
    static func guardedWebSocketUpgrade(
        silentTimeout: Duration,
        shouldUpgrade: @escaping @Sendable (HTTPRequest, any Channel, Logger) async throws
            -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>
    ) -> HTTPServerBuilder {
        let (seconds, attoseconds) = silentTimeout.components
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return HTTPServerBuilder { responder in
            SilentConnectionGuard(
                base: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init(), shouldUpgrade: shouldUpgrade),
                timeout: timeout)
        }
    }
}

/// Watches a connection until its first bytes arrive; see `SilentConnectionGuard`.
final class FirstBytesHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var heard = false
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !heard {
            heard = true
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !heard {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
