import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// One HTTP/2 stream, seen as an HTTP/1-style request: collect it, ask the emulator, answer.
final class APNsStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let emulator: APNsEmulator
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(emulator: APNsEmulator) {
        self.emulator = emulator
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            // Apple cuts off at its limit; keep a little past it so "too large" can be told.
            if body.readableBytes <= 8192 { body.writeBuffer(&chunk) }
        case .end:
            guard let head else { return }
            let answer = emulator.answer(method: head.method, uri: head.uri, headers: head.headers, body: Data(buffer: body))
            respond(answer, context: context)
        }
    }

    private func respond(_ answer: APNsEmulator.Answer, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(answer.headers)
        headers.add(name: "content-length", value: String(answer.body.count))
        let write = { [self] in
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: answer.status, headers: headers))), promise: nil)
            if !answer.body.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(data: answer.body)))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        if answer.delay > .zero {
            let (seconds, attoseconds) = answer.delay.components
            let loopBound = NIOLoopBound(write, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {
                loopBound.value()
            }
        } else {
            write()
        }
    }
}
