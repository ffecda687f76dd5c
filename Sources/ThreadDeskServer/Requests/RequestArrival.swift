import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// How long a request may take to arrive, and how much of a body nobody reads is taken.
public struct RequestArrivalLimits: Sendable, Hashable {
    /// From a request's first byte to the end of its body.
    public var timeout: Duration
    /// Body bytes still taken (and dropped) after an answer given before its request's body was
    /// in (a 401, a 413, a 503 `busy`), so that a client still sending reads the answer; past
    /// them the connection closes instead. The largest body the server accepts, by default.
    public var unreadBodyLimit: Int

    public init(timeout: Duration, unreadBodyLimit: Int) {
        (self.timeout, self.unreadBodyLimit) = (timeout, unreadBodyLimit)
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
/// A body the handler left unread is not drained for ever: after the answer, at most
/// `unreadBodyLimit` more bytes are taken (within the same deadline), then the connection closes.
/// Clients that send on while the answer comes (most HTTP clients) read it that way, as nginx's
/// lingering close lets them.
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
    /// Bytes of a request that is not whole yet have arrived.
    private var arriving = false
    private var headsRead = 0
    private var endsRead = 0
    private var answersEnded = 0
    /// An answer's head went out and its end not yet.
    private var answering = false
    /// Body bytes still taken after the answer; nil while the request's answer is not done.
    private var unreadAllowance: Int?
    private var closed = false

    init(limits: RequestArrivalLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    /// The first byte of a request (from `RequestArrivalStart`): its clock starts.
    func bytesArrived() {
        guard !arriving, !closed, let context else { return }
        start(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        switch unwrapInboundIn(data) {
        case .head:
            headsRead += 1
            if !arriving { start(context) }
        case .body(let bytes):
            if let allowance = unreadAllowance {
                guard allowance >= bytes.readableBytes else { return closeNow(context) }
                unreadAllowance = allowance - bytes.readableBytes
            }
        case .end:
            endsRead += 1
            arriving = false
            unreadAllowance = nil
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.status.kind != .informational { answering = true }
        case .body:
            break
        case .end:
            answering = false
            answersEnded += 1
            if endsRead < headsRead { unreadAllowance = limits.unreadBodyLimit }
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        arriving = true
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(limits.timeout)) { [self] in
            timer = nil
            guard arriving, !closed, let context = self.context else { return }
            shut(context, answer: isUnanswered)
        }
    }

    /// Whether the head of a request after the one being answered has been read (a client that
    /// pipelines): what the connection's task will read next.
    var requestWaitsBehindAnswer: Bool { headsRead > answersEnded + 1 }

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

    private func closeNow(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        closed = true
        timer?.cancel()
        timer = nil
        context.close(promise: nil)
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// First in the pipeline: tells `RequestArrivalHandler` when bytes arrive, so a head sent a byte
/// at a time is on the clock too; and the stop's drain when the listener quiesces (the first
/// connection to hear it begins the drain, so the listener's own wait for its connections counts
/// against the grace, as every later part's does).
final class RequestArrivalStart: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let arrival: RequestArrivalHandler
    private let stop: ShutdownDrain?

    init(_ arrival: RequestArrivalHandler, stop: ShutdownDrain? = nil) { (self.arrival, self.stop) = (arrival, stop) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arrival.bytesArrived()
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { stop?.begin() }
        context.fireUserInboundEventTriggered(event)
    }
}
