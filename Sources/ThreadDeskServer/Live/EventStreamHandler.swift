import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Prometheus
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
    }

    private let stream: LiveStream
    private let hub: LiveHub
    /// The position after the last event written: a `Last-Event-ID` to resume from.
    private var position: Int64
    private var context: ChannelHandlerContext?
    private var ended = false
    /// A store read (the changes, or the token check) is under way; what is signalled meanwhile
    /// waits in the subscriber's flags and is read when it is done.
    private var reading = false
    private var checkingToken = false
    /// What waits for a token check: a keep-alive, an agent typing.
    private var heldKeepAlive = false
    private var heldTyping: Date?
    /// Writes handed to the connection and not yet taken by its socket.
    private var writesPending = 0
    /// The connection's task closed the connection to let go (answered without closing).
    private var taskLetGo = false
    /// The close that follows the last chunk if the client never takes it.
    private var lastChunkDeadline: Scheduled<Void>?

    private static let keepAlive = ByteBuffer(staticString: ": keep-alive\n\n")

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

    // MARK: The hub's signals (on the event loop)

    func receive(_ signal: LiveSignal) {
        guard !ended, let context else { return }
        switch signal {
        case .keepAlive:
            // A client that has not read what was written gains nothing from a keep-alive.
            guard context.channel.isWritable else { return }
            // A token that may have ended is checked before anything more is sent.
            if checkingToken || stream.subscriber.hasTokenCheck {
                heldKeepAlive = true
                readNext()
            } else {
                write(Self.keepAlive)
            }
        case .typing(let until):
            guard context.channel.isWritable else { return }
            if checkingToken || stream.subscriber.hasTokenCheck {
                heldTyping = until
                readNext()
            } else {
                writeTyping(until)
            }
        case .changed, .tokensChanged:
            readNext()
        }
    }

    /// Starts the next store read the subscriber's flags ask for, one at a time: the token check
    /// first, then the changes.
    private func readNext() {
        guard !ended, !reading, let context else { return }
        let subscriber = stream.subscriber
        if subscriber.takeTokenCheck() {
            reading = true
            checkingToken = true
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let (loop, stream) = (context.eventLoop, self.stream)
            Task {
                let check = await stream.checkToken()
                loop.execute { bound.value.tokenChecked(check) }
            }
        } else {
            readChanges()
        }
    }

    /// Reads what changed, when something did and the client has taken what was written before
    /// (a client that reads slowly is sent nothing more until it has: the change stays flagged,
    /// and its writability coming back reads it).
    private func readChanges() {
        guard !ended, !reading, let context, context.channel.isWritable, stream.subscriber.hasChange else { return }
        reading = true
        let trace = stream.subscriber.takeChange()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let (loop, stream, position) = (context.eventLoop, self.stream, self.position)
        Task {
            await stream.readChanges(after: position, trace: trace) { read in
                try? await loop.submit { bound.value.changesRead(read) }.get()
            }
        }
    }

    private func tokenChecked(_ check: LiveStream.TokenCheck) {
        reading = false
        checkingToken = false
        switch check {
        case .ended, .failed:
            return end(.finished)
        case .lives:
            // Another change of the user's tokens came meanwhile: checked again first.
            if stream.subscriber.hasTokenCheck { return readNext() }
        case .unknown:
            // The store could not answer: the stream goes on, and the next signal checks again
            // (not at once, which would spin while the store is away).
            break
        }
        if heldKeepAlive { write(Self.keepAlive) }
        if let until = heldTyping { writeTyping(until) }
        (heldKeepAlive, heldTyping) = (false, nil)
        readChanges()
    }

    private func changesRead(_ read: LiveStream.ChangeRead) {
        reading = false
        switch read {
        case .events(let batch):
            position = batch.position
            if !batch.events.isEmpty {
                write(ByteBuffer(string: batch.events.map(\.text).joined()))
                stream.metrics.liveEvents.increment(by: Int64(batch.events.count))
            }
        case .unavailable:
            break
        case .failed:
            return end(.finished)
        }
        readNext()
    }

    private func writeTyping(_ until: Date) {
        guard let event = stream.typing(until: until, at: position) else { return }
        write(ByteBuffer(string: event.text))
        stream.metrics.liveEvents.increment()
    }

    /// Writes part of the body. The hub reads how long the oldest pending write has waited: a
    /// client that stopped reading never lets it finish, and is closed.
    private func write(_ buffer: ByteBuffer) {
        guard !ended, let context else { return }
        if writesPending == 0 { stream.subscriber.writesBegan() }
        writesPending += 1
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [self] result in
            writesPending -= 1
            // Another write taken: the client reads, and the clock starts again for the rest.
            if writesPending == 0 { stream.subscriber.writesEnded() } else { stream.subscriber.writesBegan() }
            if case .failure = result { end(.closed) }
        }
        context.writeAndFlush(wrapOutboundOut(.body(buffer)), promise: promise)
    }

    /// Ends the stream (once): it leaves the hub, and its connection closes.
    func end(_ ending: Ending) {
        guard !ended else { return }
        ended = true
        stream.subscriber.detach()
        hub.unsubscribe(stream.subscriber)
        guard let context else { return }
        switch ending {
        case .finished:
            let promise = context.eventLoop.makePromise(of: Void.self)
            promise.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
            // A client that stopped reading never takes the last chunk: the hub no longer watches
            // this stream, so its write gets the same time here.
            lastChunkDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.timeAmount(hub.settings.writeTimeout)) {
                context.close(promise: nil)
            }
        case .closed:
            context.close(promise: nil)
        }
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

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
            end(.finished)
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
