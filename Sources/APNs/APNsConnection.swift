import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One HTTP/2 connection to one APNs host, as Apple asks providers to keep: opened on first use,
/// every notification a stream of it, opened again after it drops or the host sends GOAWAY.
///
/// Written on SwiftNIO's HTTP/2 directly: a push is a HEADERS and a DATA frame out and a HEADERS
/// frame back (a body only when refused), and a general HTTP client's request path cost two
/// thirds of the time per push (bench/RESULTS.md).
final class APNsConnection: Sendable {
    /// What APNs answered on one stream.
    struct Answer: Sendable {
        var status: Int
        var apnsID: String?
        var body: ByteBuffer
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let host: String
    let port: Int
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup

    private struct Open: Sendable {
        let channel: any Channel
        let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    }

    private enum State {
        case idle
        case opening(EventLoopFuture<Open>)
        case open(Open)
        case shutDown
    }

    private let state = Mutex(State.idle)

    /// Largest body APNs sends (an error's JSON); more is a broken peer.
    static let bodyLimit = 64 * 1024

    init(host: String, port: Int, tls: NIOSSLContext, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.host = host
        self.port = port
        self.tls = tls
        self.group = group
    }

    /// Sends one request on a new stream and waits (at most `timeout`) for its answer.
    func send(path: String, headers: [(String, String)], body: ByteBuffer, timeout: TimeAmount) async throws -> Answer {
        let connection = try await connection(timeout: timeout)
        let promise = connection.channel.eventLoop.makePromise(of: Answer.self)
        var fields = HPACKHeaders([(":method", "POST"), (":scheme", "https"), (":authority", host), (":path", path)])
        for (name, value) in headers { fields.add(name: name, value: value) }
        fields.add(name: "content-length", value: String(body.readableBytes))
        let request = fields
        connection.multiplexer.createStreamChannel(promise: nil) { stream in
            do {
                try stream.pipeline.syncOperations.addHandler(StreamHandler(answer: promise, timeout: timeout))
            } catch {
                promise.fail(error)
                return stream.eventLoop.makeFailedFuture(error)
            }
            stream.write(HTTP2Frame.FramePayload.headers(.init(headers: request)), promise: nil)
            stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(body), endStream: true)), promise: nil)
            return stream.eventLoop.makeSucceededVoidFuture()
        }
        return try await promise.futureResult.get()
    }

    /// The open connection, or a new one (one attempt at a time, shared by every caller).
    private func connection(timeout: TimeAmount) async throws -> Open {
        let opening = try state.withLock { state -> EventLoopFuture<Open> in
            switch state {
            case .shutDown:
                throw Failure(description: "the APNs client is shut down")
            case .open(let open) where open.channel.isActive:
                return open.channel.eventLoop.makeSucceededFuture(open)
            case .opening(let future):
                return future
            case .idle, .open:
                let future = open(timeout: timeout)
                state = .opening(future)
                return future
            }
        }
        do {
            let open = try await opening.get()
            state.withLock { state in
                if case .opening(let future) = state, future === opening { state = .open(open) }
            }
            guard open.channel.isActive else { throw Failure(description: "the connection to \(host) closed") }
            return open
        } catch {
            state.withLock { state in
                if case .opening(let future) = state, future === opening { state = .idle }
            }
            throw error
        }
    }

    private func open(timeout: TimeAmount) -> EventLoopFuture<Open> {
        let host = host
        let tls = tls
        let eventLoop = group.next()
        let ready = eventLoop.makePromise(of: NIOHTTP2Handler.StreamMultiplexer.self)
        let connected = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: host.first?.isNumber == true ? nil : host))
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: .init(), streamConfiguration: .init(),
                        inboundStreamInitializer: { stream in stream.close() })
                    ready.succeed(multiplexer)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    ready.fail(error)
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
        connected.whenFailure { ready.fail($0) }
        return connected.and(ready.futureResult).map { channel, multiplexer in
            // Dropped by Apple (idle, GOAWAY) or by the network: the next send reconnects.
            channel.closeFuture.whenComplete { [weak self] _ in self?.forget(channel) }
            return Open(channel: channel, multiplexer: multiplexer)
        }
    }

    private func forget(_ channel: any Channel) {
        state.withLock { state in
            if case .open(let open) = state, open.channel === channel { state = .idle }
        }
    }

    /// Closes the connection without waiting for it to close (for a `deinit`).
    func close() {
        let previous = state.withLock { state in
            defer { state = .shutDown }
            return state
        }
        if case .open(let open) = previous { open.channel.close(promise: nil) }
        if case .opening(let future) = previous { future.whenSuccess { $0.channel.close(promise: nil) } }
    }

    /// Closes the connection; sends after it fail at once.
    func shutdown() async {
        let previous = state.withLock { state in
            defer { state = .shutDown }
            return state
        }
        let channel: (any Channel)?
        switch previous {
        case .open(let open): channel = open.channel
        case .opening(let future): channel = try? await future.get().channel
        case .idle, .shutDown: channel = nil
        }
        try? await channel?.close()
    }
}

/// Reads one stream's answer: the status and `apns-id` from HEADERS, the body from DATA, done
/// at end of stream; a stream that closes first or outlives `timeout` fails.
private final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload

    private let answer: EventLoopPromise<APNsConnection.Answer>
    private let timeout: TimeAmount
    private var status: Int?
    private var apnsID: String?
    private var body: ByteBuffer?
    private var timer: Scheduled<Void>?
    private var done = false

    init(answer: EventLoopPromise<APNsConnection.Answer>, timeout: TimeAmount) {
        self.answer = answer
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let timeout = timeout
        timer = context.eventLoop.scheduleTask(in: timeout) {
            handler.value.finish(.failure(APNsConnection.Failure(description: "no answer from APNs within \(timeout)")), context: bound.value)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var endStream = false
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            if let code = headers.headers.first(name: ":status").flatMap(Int.init) {
                status = code
                apnsID = headers.headers.first(name: "apns-id")
            }
            endStream = headers.endStream
        case .data(let frame):
            if case .byteBuffer(var bytes) = frame.data {
                if (body?.readableBytes ?? 0) + bytes.readableBytes > APNsConnection.bodyLimit {
                    finish(.failure(APNsConnection.Failure(description: "APNs answered with an oversized body")), context: context)
                    return
                }
                if body == nil { body = bytes } else { body!.writeBuffer(&bytes) }
            }
            endStream = frame.endStream
        default:
            break
        }
        if endStream {
            guard let status else {
                finish(.failure(APNsConnection.Failure(description: "APNs answered without a status")), context: context)
                return
            }
            finish(.success(.init(status: status, apnsID: apnsID, body: body ?? ByteBuffer())), context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(APNsConnection.Failure(description: "the stream closed before APNs answered")), context: context)
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<APNsConnection.Answer, any Error>, context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        timer?.cancel()
        answer.completeWith(result)
        if case .failure = result { context.close(promise: nil) }
    }
}
