import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// How long a request may take to arrive, and how long a connection answered before its body
/// came lingers.
public struct RequestArrivalLimits: Sendable, Hashable {
    /// From a request's first byte to the end of its body.
    public var timeout: Duration
    /// After an answer given before its request's body was in (a 401, a 413, a 503 `busy`): how
    /// long the client gets to read it before the connection closes. Nothing more is read.
    public var linger: Duration

    public init(timeout: Duration, linger: Duration = .seconds(1)) {
        (self.timeout, self.linger) = (timeout, linger)
    }
}

/// What the handler reading a late body gets instead of its end (answered 408, if at all).
struct RequestArrivedLate: Error {}

/// Holds each request to a deadline for arriving whole: head and body within `timeout` of its
/// first byte, however the bytes are spread (an idle timer restarts with every byte, so a client
/// sending one byte a second would hold its connection, and any gate slot its body took, for
/// ever). Past the deadline the connection closes, with a 408 when nothing was answered yet; the
/// handler reading the body sees an error, not a short body, and lets go of what it held.
///
/// A body the handler left unread is not drained: an answer that goes out before its request's
/// body is in says `Connection: close`, then the output closes (the client reads the answer and
/// its end), nothing more is read, and the connection closes `linger` later — a pause so the
/// client reads the answer before the close resets the connection, as Go's server does.
///
/// Sits after the HTTP codec; `RequestArrivalStart`, first in the pipeline, starts the clock at a
/// request's first byte (before its head is whole). Everything runs on the channel's event loop.
final class RequestArrivalHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let limits: RequestArrivalLimits
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var lingerTimer: Scheduled<Void>?
    /// Bytes of a request that is not whole yet have arrived.
    private var arriving = false
    private var headsRead = 0
    private var endsRead = 0
    private var answersEnded = 0
    /// An answer's head went out and its end not yet.
    private var answering = false
    /// The answer began before its request's body was in: the connection ends with it.
    private var endsWithAnswer = false
    /// The answer is out and the output closed: nothing more is read until the close.
    private var lingering = false
    private var closed = false

    init(limits: RequestArrivalLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        self.context = nil
    }

    /// The first byte of a request (from `RequestArrivalStart`): its clock starts.
    func bytesArrived() {
        guard !arriving, !closed, !lingering, let context else { return }
        start(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        let part = unwrapInboundIn(data)
        guard !lingering else {
            // The client finished after all: nothing is left to wait for.
            if case .end = part { closeNow(context) }
            return
        }
        switch part {
        case .head:
            headsRead += 1
            if !arriving { start(context) }
        case .body:
            break
        case .end:
            endsRead += 1
            arriving = false
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        // Lingering: what the client still sends stays in its socket, unread.
        if !lingering { context.read() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closed, !lingering else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status.kind != .informational:
            answering = true
            if endsRead < headsRead {
                endsWithAnswer = true
                head.headerFields[.connection] = "close"
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            }
        case .head, .body:
            break
        case .end:
            answering = false
            answersEnded += 1
            if endsWithAnswer {
                context.writeAndFlush(data, promise: promise)
                linger(context)
                return
            }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        cancelTimers()
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        arriving = true
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(limits.timeout)) { [self] in
            timer = nil
            guard arriving, !closed, let context = self.context else { return }
            if lingering { return closeNow(context) }
            shut(context, answer: isUnanswered)
        }
    }

    /// Whether the request still arriving has had no answer begun: the one whose body is late,
    /// or a new one whose head is (every earlier one answered).
    private var isUnanswered: Bool {
        guard !answering else { return false }
        return endsRead < headsRead ? answersEnded < headsRead : answersEnded == headsRead
    }

    /// The deadline passed: the reader of the body stops with an error (a closed stream alone
    /// reads as its end), the client gets a 408 if nothing was answered, and the connection goes.
    private func shut(_ context: ChannelHandlerContext, answer: Bool) {
        context.fireErrorCaught(RequestArrivedLate())
        if answer {
            let head = HTTPResponse(status: .requestTimeout, headerFields: [.connection: "close", .contentLength: "0"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        closeNow(context)
    }

    private func linger(_ context: ChannelHandlerContext) {
        lingering = true
        context.close(mode: .output, promise: nil)
        lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(limits.linger)) { [self] in
            lingerTimer = nil
            if let context = self.context { closeNow(context) }
        }
    }

    private func closeNow(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        closed = true
        cancelTimers()
        context.close(promise: nil)
    }

    private func cancelTimers() {
        timer?.cancel()
        timer = nil
        lingerTimer?.cancel()
        lingerTimer = nil
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// First in the pipeline: tells `RequestArrivalHandler` when bytes arrive, so a head sent a byte
/// at a time is on the clock too.
final class RequestArrivalStart: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let arrival: RequestArrivalHandler

    init(_ arrival: RequestArrivalHandler) { self.arrival = arrival }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arrival.bytesArrived()
        context.fireChannelRead(data)
    }
}
