import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One HTTP/2 stream: collect the request's HEADERS and DATA, ask the emulator, answer. Frames
/// are read directly, not through an HTTP/1 translation, so a request naming its host with a
/// `host` header instead of `:authority` (as some APNs clients do, and Apple accepts) works.
final class APNsStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let emulator: APNsEmulator
    private var headers: HPACKHeaders?
    private var body = ByteBuffer()

    init(emulator: APNsEmulator) {
        self.emulator = emulator
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            headers = frame.headers
            if frame.endStream { finish(context: context) }
        case .data(let frame):
            // Apple cuts off at its limit; keep a little past it so "too large" can be told.
            if case .byteBuffer(var chunk) = frame.data, body.readableBytes <= 8192 { body.writeBuffer(&chunk) }
            if frame.endStream { finish(context: context) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func finish(context: ChannelHandlerContext) {
        guard let headers else { return }
        var plain = HTTPHeaders()
        for (name, value, _) in headers where !name.hasPrefix(":") { plain.add(name: name, value: value) }
        let method = HTTPMethod(rawValue: headers.first(name: ":method") ?? "GET")
        let answer = emulator.answer(method: method, uri: headers.first(name: ":path") ?? "/", headers: plain, body: Data(buffer: body))
        respond(answer, context: context)
    }

    private func respond(_ answer: APNsEmulator.Answer, context: ChannelHandlerContext) {
        var response = HPACKHeaders([(":status", String(answer.status.code))])
        for (name, value) in answer.headers { response.add(name: name, value: value) }
        response.add(name: "content-length", value: String(answer.body.count))
        let write = { [self] in
            context.write(wrapOutboundOut(.headers(.init(headers: response, endStream: answer.body.isEmpty))), promise: nil)
            if !answer.body.isEmpty {
                context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(data: answer.body)), endStream: true))), promise: nil)
            }
            context.flush()
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
