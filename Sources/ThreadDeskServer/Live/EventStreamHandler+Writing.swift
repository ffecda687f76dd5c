import Foundation
import NIOCore
import NIOHTTPTypes
import Prometheus

/// What the stream writes, on the connection's event loop: the hub's signals, the store reads they
/// ask for (one at a time, the token check first), and the events and keep-alives those give.
extension EventStreamHandler {
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
    func readNext() {
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
                stream.metrics.live.events.increment(by: Int64(batch.events.count))
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
        stream.metrics.live.events.increment()
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
}
