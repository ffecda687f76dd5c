import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1.1 channel with a smaller first receive buffer. NIO sizes each
/// connection's next read from its last ones, starting at 2 KiB; the requests here (polls, sends,
/// a stream's one GET) are a few hundred bytes, and an idle event stream should not hold more.
/// Bigger bodies still grow the buffer as they arrive.
struct LeanHTTP1Channel: ServerChildChannel {
    let base: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536))
            .flatMap { _ in base.setup(channel: channel, logger: logger) }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    static func leanHTTP1(configuration: HTTP1Channel.Configuration) -> HTTPServerBuilder {
        .init { responder in LeanHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: configuration)) }
    }
}
