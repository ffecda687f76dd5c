import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import ServiceLifecycle
import ThreadDeskCore

/// An open `/v1/events` stream once its first events are written. The connection's task hands the
/// stream to this handler in the connection's pipeline and ends: what the hub signals arrives on
/// the connection's event loop and is written from there, keep-alives without waking any task,
/// changes and token checks through a store read in a task that lives as long as the read. An
/// idle stream is its connection, its handler and its subscriber, nothing more.
///
/// The handler owns the connection's end from the hand-over on. The connection's task lets go by
/// closing the connection (it cannot end otherwise); that close is answered here without closing,
/// and the handler closes the connection when the stream ends: the hub finished it (its lifetime,
/// a newer stream of the user, the server stopping), its token ended, its client went away or
/// stopped reading, the server quiesced, or a new request came on its connection.
///
/// Sits after `RequestArrivalHandler`, before Hummingbird's connection state handler (which would
/// keep the quiesce event to itself while a response is under way).
final class EventStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    enum Ending {
        /// The response ends (its last chunk), then the connection closes.
        case finished
        /// The connection closes at once.
        case closed
        /// The server stops: the response ends (its last chunk, a moment given to a client that
        /// does not take it), then the connection closes.
        case stopped
    }

    let stream: LiveStream
    let hub: LiveHub
    /// The position after the last event written: a `Last-Event-ID` to resume from.
    var position: Int64
    var context: ChannelHandlerContext?
    var ended = false
    /// A store read (the changes, or the token check) is under way; what is signalled meanwhile
    /// waits in the subscriber's flags and is read when it is done.
    var reading = false
    var checkingToken = false
    /// What waits for a token check: a keep-alive, an agent typing.
    var heldKeepAlive = false
    var heldTyping: Date?
    /// Writes handed to the connection and not yet taken by its socket.
    var writesPending = 0
    /// The connection's task closed the connection to let go (answered without closing).
    var taskLetGo = false
    /// The close that follows the last chunk if the client never takes it.
    var lastChunkDeadline: Scheduled<Void>?

    static let keepAlive = ByteBuffer(staticString: ": keep-alive\n\n")

    private init(stream: LiveStream, hub: LiveHub, position: Int64) {
        self.stream = stream
        self.hub = hub
        self.position = position
    }

    /// Hands the stream on `channel` to a handler of its own. Called by the response's body,
    /// after its first events; the body then throws `HandedOver` so that the connection's task ends.
    static func takeOver(_ channel: any Channel, stream: LiveStream, hub: LiveHub, from position: Int64) async throws {
        try await channel.eventLoop.submit {
            let handler = EventStreamHandler(stream: stream, hub: hub, position: position)
            let pipeline = channel.pipeline.syncOperations
            let arrival = try pipeline.handler(type: RequestArrivalHandler.self)
            try pipeline.addHandler(handler, position: .after(arrival))
            // A request sent after the stream's and read before the handler was in place went on
            // to the connection's task, which reads no more: the connection closes, as it does
            // for one that comes later.
            if arrival.requestWaitsBehindAnswer { handler.end(.closed) }
        }.get()
        // A stop that began before the handler was in the pipeline sent its quiesce event past it.
        if Task.isShuttingDownGracefully { stream.subscriber.finish() }
    }

    /// What the response's body throws once the handler holds the stream: the connection's task
    /// ends with it, and its close of the connection is the handler's to answer.
    struct HandedOver: Error {}

    // MARK: The pipeline

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        hub.handlerAdded()
        let sink = EventStreamSink(eventLoop: context.eventLoop, handler: NIOLoopBound(self, eventLoop: context.eventLoop))
        guard stream.subscriber.attach(sink) else { return end(.finished) }
        // The connection closed while the stream was handed over: nothing more will tell.
        guard context.channel.isActive else { return end(.closed) }
        // The connection's task no longer reads: reading goes on here, so a client that leaves is
        // seen at once.
        context.read()
        // What was signalled before the hand-over.
        readNext()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end(.closed)
        lastChunkDeadline?.cancel()
        lastChunkDeadline = nil
        self.context = nil
        hub.handlerRemoved()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The client took what was written: what changed meanwhile is read now.
        if context.channel.isWritable { readNext() }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A new request on a connection whose answer never ends cannot be answered.
        if case .head = unwrapInboundIn(data) { end(.closed) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !ended { context.read() }
    }
}
